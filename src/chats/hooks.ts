import type { Principal } from '../auth/principal.ts'
import { executableFunction } from '../kinds/function/executable.ts'
import { invokeFunction } from '../functions/invoke.ts'
import type { JobState } from '../jobs/job-state.ts'
import type { Logger } from '../kernel/log.ts'
import type { ChatRow } from './store.ts'
import type { AgentRecord } from './tools.ts'
import type { TurnRuntime } from './turn-runtime.ts'

type HookReply = { content?: string; block?: boolean; reply?: string } | null

/** Runs the hooks of one event: async ones fire and forget, sync ones may replace or block. */
export async function runHooks(
  rt: TurnRuntime,
  which: 'on_user_message' | 'on_assistant_message',
  p: Principal,
  chat: ChatRow,
  agent: AgentRecord,
  job: JobState,
  message: { role: string; content: string },
  log: Logger,
): Promise<{ content: string } | { block: true; reply: string }> {
  const { d } = rt
  const hooks = agent.hooks[which]
  let content = message.content
  for (const hook of hooks) {
    const [ns = '', name = ''] = hook.function.split('/')
    const fn = await executableFunction(d.resources, p, ns, name).catch(() => null)
    if (fn === null) {
      log.warn({ hook: hook.function }, 'hook function not found or not permitted: skipped')
      continue
    }
    const input = { message: { role: message.role, content }, chat_id: chat.id, agent: { namespace: agent.namespace, name: agent.name }, user_id: chat.user_id }
    const run = invokeFunction(d.invoke, p, fn, { input, triggerType: 'hook', triggerId: `${which}:${chat.id}`, chatId: chat.id, parent: { id: job.id, depth: job.depth } })
    if (hook.async === true) {
      run.catch((err: unknown) => log.warn({ err, hook: hook.function }, 'async hook failed'))
      continue
    }
    const out = await run
    if (out.status !== 'success') {
      if (out.status === 'timeout' && hook.on_timeout === 'block') return { block: true, reply: 'The message could not be checked in time; please try again.' }
      log.warn({ hook: hook.function, error: out.error }, 'hook failed: message passes unchanged')
      continue
    }
    const r = out.result as HookReply
    if (r !== null && typeof r === 'object') {
      if (r.block === true) return { block: true, reply: typeof r.reply === 'string' ? r.reply : '' }
      if (typeof r.content === 'string') content = r.content
    }
  }
  return { content }
}
