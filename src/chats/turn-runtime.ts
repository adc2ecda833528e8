import { historyCache, type HistoryCache } from './history-cache.ts'
import { chatStore, type ChatStore } from './store.ts'
import { systemToolProvider } from './system-tools.ts'
import { ownerNamespaces, toolProviders } from './tools.ts'
import type { ToolDeps, ToolProvider } from '../feature/tools.ts'
import type { TurnDeps } from './turn.ts'
import { dailyBudget, type DailyBudget } from '../usage/budget.ts'

/** What every turn of one worker shares: the deps, the chat store and history cache, the tool providers built once. */
export interface TurnRuntime {
  d: TurnDeps
  store: ChatStore
  history: HistoryCache
  toolDeps: ToolDeps
  providers: ToolProvider[]
  /** The daily token budget, checked when a turn starts (src/usage/budget.ts). */
  budget: DailyBudget
}

export function turnRuntime(d: TurnDeps): TurnRuntime {
  const toolDeps: ToolDeps = {
    db: d.db,
    config: d.config,
    resources: d.resources,
    invoke: d.invoke,
    ownerNamespaces: (agent) => ownerNamespaces(d.db, agent),
    delegate: (c, a, m) => d.delegate(c, a, m),
    delegateSuspended: (c, a, m, id) => d.delegateSuspended(c, a, m, id),
  }
  const store = chatStore(d.db)
  return {
    d,
    store,
    history: historyCache(store, d.config.CHAT_HISTORY_CACHE_CHATS),
    toolDeps,
    providers: [...toolProviders(toolDeps, d.tools), systemToolProvider(toolDeps)],
    budget: dailyBudget(d.db, d.config.USAGE_DAILY_TOKEN_BUDGET),
  }
}
