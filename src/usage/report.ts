import { Type as T } from '@sinclair/typebox'
import type { UsageDimension, UsageReport, UsageRow } from '../../schemas/usage.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'

const Text = T.Union([T.String(), T.Null()])
const ReportRows = rowType(
  T.Object(
    {
      day: Text,
      user_id: Text,
      agent: Text,
      agent_id: Text,
      provider: Text,
      model: Text,
      prompt_tokens: T.Number(),
      completion_tokens: T.Number(),
      total_tokens: T.Number(),
      cost: T.Union([T.Number(), T.Null()]),
      calls: T.Number(),
    },
    { title: 'usage_daily' },
  ),
)

export interface ReportQuery {
  from: string
  to: string
  /** Only this user's rows (a non-admin's own id, always). */
  userId?: string | undefined
  /** `<namespace>/<name>` or the agent's id. */
  agent?: string | undefined
  provider?: string | undefined
  model?: string | undefined
  groupBy: readonly UsageDimension[]
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * The rollup `usage_daily` (migrations/0040-usage.sql) summed by the dimensions asked for, over
 * a range of UTC days: an index range scan of at most a year of days, never the messages.
 */
export async function usageReport(db: Db, q: ReportQuery): Promise<UsageReport> {
  const by = new Set(q.groupBy)
  const dim = (d: UsageDimension, column: ReturnType<typeof sql.fragment>) =>
    by.has(d) ? column : sql.fragment`null::text`
  const where = [
    sql.fragment`day between ${q.from}::date and ${q.to}::date`,
    ...(q.userId === undefined ? [] : [sql.fragment`user_id = ${q.userId}::uuid`]),
    ...(q.agent === undefined
      ? []
      : [UUID.test(q.agent) ? sql.fragment`agent_id = ${q.agent}::uuid` : sql.fragment`agent = ${q.agent}`]),
    ...(q.provider === undefined ? [] : [sql.fragment`provider = ${q.provider}`]),
    ...(q.model === undefined ? [] : [sql.fragment`model = ${q.model}`]),
  ]
  const keys = (['day', 'user', 'agent', 'provider', 'model'] as const)
    .filter((d) => by.has(d))
    .map((d) => (d === 'day' ? sql.fragment`day` : d === 'user' ? sql.fragment`user_id` : sql.identifier([d])))
  const groupOrder = sql.join(keys, sql.fragment`, `)
  const rows = await anyRows(
    db,
    ReportRows,
    sql.unsafe`select ${dim('day', sql.fragment`to_char(day, 'YYYY-MM-DD')`)} as day,
        ${dim('user', sql.fragment`user_id::text`)} as user_id,
        ${dim('agent', sql.fragment`agent`)} as agent,
        ${dim('agent', sql.fragment`max(agent_id::text)`)} as agent_id,
        ${dim('provider', sql.fragment`provider`)} as provider,
        ${dim('model', sql.fragment`model`)} as model,
        sum(prompt_tokens)::float8 as prompt_tokens, sum(completion_tokens)::float8 as completion_tokens,
        sum(total_tokens)::float8 as total_tokens, sum(cost)::float8 as cost, sum(calls)::float8 as calls
      from usage_daily where ${sql.join(where, sql.fragment` and `)}
      group by ${groupOrder} order by ${groupOrder}`,
  )
  const out: UsageRow[] = rows.map((r) => ({ ...r, agent_id: r.agent === '' ? null : r.agent_id }))
  return { from: q.from, to: q.to, group_by: [...q.groupBy], rows: out, totals: totalsOf(out) }
}

/** The rows summed; cost null when no row has one. */
export function totalsOf(rows: readonly UsageRow[]): UsageReport['totals'] {
  const t = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost: null as number | null, calls: 0 }
  for (const r of rows) {
    t.prompt_tokens += r.prompt_tokens
    t.completion_tokens += r.completion_tokens
    t.total_tokens += r.total_tokens
    t.calls += r.calls
    if (r.cost !== null) t.cost = (t.cost ?? 0) + r.cost
  }
  return t
}
