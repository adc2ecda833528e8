import { Type as T, type Static } from '@sinclair/typebox'
import { Name, Namespace, Nullable, Timestamp, Uuid } from './common.ts'

/*
 * Webhooks and schedules. Bodies use the API's snake_case names.
 */

/**
 * A webhook path: one or more `/`-separated segments of letters, digits, `_`, `-` and `.`, each
 * starting with a letter or digit — so `.`, `..`, empty segments and percent-escapes can never be
 * part of one (no traversal), and the path is usable as-is in a URL.
 */
export const WEBHOOK_PATH_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,62}){0,7}$'
export const WebhookPath = T.String({
  pattern: WEBHOOK_PATH_PATTERN,
  maxLength: 255,
  description:
    'URL path below /webhooks/: 1–8 segments `<segment>/<segment>` of letters, digits, _ - . (a segment starts with a letter or digit)',
})
export const WebhookMethod = T.Union(
  ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'].map((m) => T.Literal(m)),
  { description: 'the one HTTP method the webhook answers' },
)
export const JsonObject = T.Record(T.String(), T.Unknown())

export const WebhookCreateBody = T.Object(
  {
    path: WebhookPath,
    http_method: T.Optional(WebhookMethod),
    function_namespace: T.Optional(Namespace),
    function_name: Name,
    requires_auth: T.Optional(
      T.Boolean({
        default: true,
        description:
          'true: the caller presents a Bearer token or API key and runs as itself; false: anonymous calls run as the webhook owner',
      }),
    ),
    default_values: T.Optional(
      T.Record(T.String(), T.Unknown(), { description: 'merged beneath the request data (request wins)' }),
    ),
    description: T.Optional(T.String({ maxLength: 4000 })),
    is_active: T.Optional(T.Boolean()),
    signing_secret: T.Optional(
      T.Union([T.String({ minLength: 16, maxLength: 256 }), T.Null()], {
        description:
          'optional HMAC-SHA256 key (16–256 characters; write-only, stored encrypted): calls must then carry `X-Webhook-Timestamp` and `X-Webhook-Signature: sha256=<hex HMAC of "<timestamp>.<raw body>">` (the raw query string for GET/DELETE) within WEBHOOK_SIGNATURE_TOLERANCE_SECONDS; null removes it',
      }),
    ),
  },
  { additionalProperties: false, title: 'WebhookCreate' },
)

export const WebhookUpdateBody = T.Object(
  {
    path: T.Optional(WebhookPath),
    http_method: T.Optional(WebhookMethod),
    function_namespace: T.Optional(Namespace),
    function_name: T.Optional(Name),
    requires_auth: T.Optional(T.Boolean()),
    default_values: T.Optional(JsonObject),
    description: T.Optional(T.String({ maxLength: 4000 })),
    is_active: T.Optional(T.Boolean()),
    signing_secret: T.Optional(
      T.Union([T.String({ minLength: 16, maxLength: 256 }), T.Null()], {
        description:
          'optional HMAC-SHA256 key (16–256 characters; write-only, stored encrypted): calls must then carry `X-Webhook-Timestamp` and `X-Webhook-Signature: sha256=<hex HMAC of "<timestamp>.<raw body>">` (the raw query string for GET/DELETE) within WEBHOOK_SIGNATURE_TOLERANCE_SECONDS; null removes it',
      }),
    ),
  },
  { additionalProperties: false, title: 'WebhookUpdate' },
)

export const Webhook = T.Object(
  {
    id: Uuid,
    path: T.String(),
    http_method: T.String(),
    function_namespace: T.String(),
    function_name: T.String(),
    requires_auth: T.Boolean(),
    default_values: JsonObject,
    description: T.String(),
    is_active: T.Boolean(),
    owner_id: Uuid,
    has_signing_secret: T.Boolean({ description: 'calls must be signed (the secret itself is never returned)' }),
    url_path: T.String({ description: '`/webhooks/<path>`: where the webhook is called' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Webhook' },
)
export type Webhook = Static<typeof Webhook>

/** What the WEBHOOKS bucket holds per path (written by the resource service, watched by gateways). */
export const WebhookEntry = T.Object({
  id: Uuid,
  path: T.String(),
  http_method: T.String(),
  requires_auth: T.Boolean(),
  function_namespace: T.String(),
  function_name: T.String(),
  default_values: JsonObject,
  owner_id: Uuid,
  is_active: T.Boolean(),
  /** Calls must carry a signature (the gateway forwards the signed bytes; the service checks them). Absent in entries written before signing existed. */
  signed: T.Optional(T.Boolean()),
})
export type WebhookEntry = Static<typeof WebhookEntry>

export const WebhookParams = T.Object({ path: WebhookPath })
export const WebhookCallQuery = T.Object({
  async: T.Optional(
    T.Union([T.Literal('1'), T.Literal('true')], {
      description: 'answer 202 {execution_id} at once instead of waiting for the result',
    }),
  ),
})
export const WebhookAccepted = T.Object({ execution_id: Uuid, status: T.Literal('queued') })

// ---- schedules

export const ScheduleType = T.Union([T.Literal('function'), T.Literal('agent')])
export const CronExpression = T.String({
  minLength: 9,
  maxLength: 200,
  description: 'cron: 5 fields (minute precision) or 6 with seconds first (`*/10 * * * * *`)',
})
export const TimeZone = T.String({ minLength: 1, maxLength: 64, description: 'IANA time zone (default `UTC`)' })

export const ScheduleCreateBody = T.Object(
  {
    name: Name,
    schedule_type: ScheduleType,
    target_namespace: T.Optional(Namespace),
    target_name: Name,
    cron_expression: CronExpression,
    timezone: T.Optional(TimeZone),
    input_data: T.Optional(JsonObject),
    content: T.Optional(
      T.String({ maxLength: 100_000, description: 'the message sent to the agent (agent schedules)' }),
    ),
    description: T.Optional(T.String({ maxLength: 4000 })),
    is_active: T.Optional(T.Boolean()),
  },
  { additionalProperties: false, title: 'ScheduleCreate' },
)

export const ScheduleUpdateBody = T.Object(
  {
    schedule_type: T.Optional(ScheduleType),
    target_namespace: T.Optional(Namespace),
    target_name: T.Optional(Name),
    cron_expression: T.Optional(CronExpression),
    timezone: T.Optional(TimeZone),
    input_data: T.Optional(JsonObject),
    content: T.Optional(Nullable(T.String({ maxLength: 100_000 }))),
    description: T.Optional(T.String({ maxLength: 4000 })),
    is_active: T.Optional(T.Boolean()),
  },
  { additionalProperties: false, title: 'ScheduleUpdate' },
)

export const ScheduleRun = T.Object(
  {
    tick: Timestamp,
    fired_at: Timestamp,
    job_id: Nullable(Uuid),
    chat_id: Nullable(Uuid),
    status: T.String({
      description:
        'the job status (queued, running, completed, failed, cancelled) or `refused` when the owner could not run the target then',
    }),
    error: Nullable(T.String()),
  },
  { title: 'ScheduleRun' },
)

export const Schedule = T.Object(
  {
    id: Uuid,
    name: T.String(),
    owner_id: Uuid,
    schedule_type: T.String(),
    target_namespace: T.String(),
    target_name: T.String(),
    cron_expression: T.String(),
    timezone: T.String(),
    input_data: JsonObject,
    content: Nullable(T.String()),
    description: T.String(),
    is_active: T.Boolean(),
    version: T.Integer(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Schedule' },
)
export type Schedule = Static<typeof Schedule>

export const ScheduleDetail = T.Intersect(
  [
    Schedule,
    T.Object({
      next_run: Nullable(Timestamp),
      last_run: Nullable(ScheduleRun),
      runs: T.Array(ScheduleRun, { description: 'the last runs, newest first' }),
    }),
  ],
  { title: 'ScheduleDetail' },
)

export const ScheduleParams = T.Object({ name: Name })
export const ScheduleListQuery = T.Object(
  { limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000 })), offset: T.Optional(T.Integer({ minimum: 0 })) },
  { additionalProperties: false },
)
export const ScheduleOwnerQuery = T.Object(
  {
    owner_id: T.Optional(
      T.String({ format: 'uuid', description: "another user's schedule (needs the :all permission)" }),
    ),
  },
  { additionalProperties: false },
)
export const ScheduleGetQuery = T.Object(
  {
    owner_id: T.Optional(Uuid),
    runs: T.Optional(T.Integer({ minimum: 0, maximum: 500, description: 'how many recent runs (default 20)' })),
  },
  { additionalProperties: false },
)

/** The schedule actor asks the resource service to run one tick (NATS request `svc.schedules.fire`). */
export const ScheduleFire = T.Object(
  {
    schedule_id: Uuid,
    tick: T.Integer({ minimum: 0, description: 'epoch ms of the cron time' }),
    version: T.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
)
export type ScheduleFire = Static<typeof ScheduleFire>
export const ScheduleFireReply = T.Union([
  T.Object({ ok: T.Literal(true), job_id: Nullable(T.String()), status: T.String() }),
  T.Object({ ok: T.Literal(false), error: T.String() }),
])
export type ScheduleFireReply = Static<typeof ScheduleFireReply>
