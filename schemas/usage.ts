import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable, Uuid } from './common.ts'

/* Usage accounting (`GET /api/v1/usage`, src/usage/): tokens and reported cost per UTC day. */

const Day = T.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'a UTC date, `YYYY-MM-DD`' })

export const USAGE_DIMENSIONS = ['day', 'user', 'agent', 'provider', 'model'] as const
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number]

export const UsageQuery = T.Object({
  from: T.Optional(
    T.String({
      ...Day,
      description: 'first UTC day, inclusive (default: 29 days before `to`); at most 366 days before `to`',
    }),
  ),
  to: T.Optional(T.String({ ...Day, description: 'last UTC day, inclusive (default: today, UTC)' })),
  user_id: T.Optional(
    T.String({
      format: 'uuid',
      description: "only this user's usage (a non-admin may name only themselves: else 403)",
    }),
  ),
  agent: T.Optional(
    T.String({
      pattern: '^([a-z0-9][a-z0-9_-]{0,62}/[a-z0-9][a-z0-9_-]{0,62}|[0-9a-fA-F-]{36})$',
      maxLength: 127,
      description: "an agent as `<namespace>/<name>` or its id (the OpenAI adapter's provider models have none)",
    }),
  ),
  provider: T.Optional(T.String({ minLength: 1, maxLength: 200, description: 'an llm_provider by name' })),
  model: T.Optional(T.String({ minLength: 1, maxLength: 300 })),
  group_by: T.Optional(
    T.String({
      pattern: '^(day|user|agent|provider|model)(,(day|user|agent|provider|model))*$',
      description:
        'comma-separated dimensions the rows are summed by: `day`, `user`, `agent`, `provider`, `model` (default: all five); a dimension left out is null in the rows',
    }),
  ),
})
export type UsageQuery = Static<typeof UsageQuery>

const Tokens = {
  prompt_tokens: T.Integer(),
  completion_tokens: T.Integer(),
  total_tokens: T.Integer(),
  cost: Nullable(
    T.Number({
      description:
        'sum of the costs the providers reported (e.g. `usage.cost` of OpenAI-compatible gateways); null when none was reported: no price is assumed',
    }),
  ),
  calls: T.Integer({ description: 'LLM calls counted' }),
}

export const UsageRow = T.Object({
  day: Nullable(Day),
  user_id: Nullable(Uuid),
  agent: Nullable(
    T.String({ description: "`<namespace>/<name>`; '' for the OpenAI adapter's provider models (no agent)" }),
  ),
  agent_id: Nullable(Uuid),
  provider: Nullable(T.String({ description: 'the llm_provider name' })),
  model: Nullable(T.String()),
  ...Tokens,
})
export type UsageRow = Static<typeof UsageRow>

export const UsageReport = T.Object({
  from: Day,
  to: Day,
  group_by: T.Array(T.Union(USAGE_DIMENSIONS.map((d) => T.Literal(d)))),
  rows: T.Array(UsageRow, { description: 'ordered by day, then user, agent, provider, model' }),
  totals: T.Object(Tokens),
})
export type UsageReport = Static<typeof UsageReport>
