import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable } from '../../schemas/common.ts'
import { issueAccessToken } from '../auth/tokens.ts'
import type { Config } from '../kernel/config.ts'
import { AppError, badRequest } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import { extraCa, guardedFetch, parseHostList, resolveTarget, type OutboundDeps } from '../platform/outbound-http.ts'
import { maybeRow, rowType } from '../platform/typed-rows.ts'
import type { JobState } from '../jobs/job-state.ts'
import type { JobFinishedListener } from '../jobs/mirror.ts'

/*
 * Execution callbacks.
 *
 * `validateCallbackUrl` is called by the async execute endpoint before the job is accepted:
 * callbacks disabled (CALLBACK_URL_HOSTS empty), not HTTPS, host outside the allowlist, or a host
 * resolving to a non-public address → 400.
 *
 * `deliverCallback` is fired by the job mirror (through `executionCallbacks`, one of the mirror's
 * `onFinished` listeners, passed in where the job service is started) once an execution with a
 * callback_url has ended
 * (completed, failed, or cancelled: a cancelled execution also "terminates" and is reported as
 * `failure`, so a receiver never waits forever). One attempt, 10 s, no retry. The mirror is
 * at-least-once, so the attempt is claimed first: `callback_status` goes from null to `sending` in
 * one UPDATE and only the winner posts. A process dying mid-delivery leaves `sending` behind: the
 * spec wants at most one attempt, and a receiver reconciles through GET /executions/{id}.
 * Outcome: `sent` when the receiver answered 2xx; `failed` otherwise (the code is recorded when
 * there was an answer, null when there was none: timeout, refused connection, refused address).
 * The URL is checked again at delivery (allowlist as configured now, DNS answer as it is now, the
 * connection pinned to the checked address).
 */
export const CALLBACK_TIMEOUT_MS = 10_000

export async function validateCallbackUrl(
  url: string,
  config: Pick<Config, 'CALLBACK_URL_HOSTS'>,
  deps: Pick<OutboundDeps, 'lookup'> = {},
): Promise<void> {
  const allow = parseHostList(config.CALLBACK_URL_HOSTS)
  if (allow !== '*' && allow.length === 0)
    throw badRequest('callbacks are disabled on this installation (CALLBACK_URL_HOSTS is empty)', 'callback.disabled')
  try {
    await resolveTarget(url, { httpsOnly: true, allowHosts: allow }, deps)
  } catch (err) {
    // A host that does not resolve stays upstream.dns_failed (502): the URL broke no rule.
    if (err instanceof AppError && err.code === 'upstream.dns_failed')
      throw AppError.of(err.code, `callback_url: ${err.message}`, { cause: err })
    if (err instanceof AppError)
      throw new AppError(400, err.code.replace(/^outbound\./, 'callback.'), `callback_url: ${err.message}`, {
        cause: err,
      })
    throw err
  }
}

export interface CallbackDeps {
  db: Db
  config: Pick<Config, 'CALLBACK_URL_HOSTS' | 'OUTBOUND_EXTRA_CA_FILE' | 'SECRET_KEY' | 'ACCESS_TOKEN_EXPIRE_MINUTES'>
  log: Logger
  /** Default 10 s; tests shorten it. */
  timeoutMs?: number
  /** Name resolution override (tests). */
  lookup?: OutboundDeps['lookup']
}

export type CallbackOutcome = { status: 'sent' | 'failed'; code: number | null } | 'not-claimed'

/* Rows as they come back (timestamps as ISO strings, jsonb parsed: src/platform/db.ts). */
/** The execution whose callback this call claimed (callback_url is not null by the claim's WHERE). */
const ClaimedRow = rowType(
  T.Object(
    {
      id: T.String(),
      namespace: T.String(),
      name: T.String(),
      status: T.String(),
      trigger_id: T.String(),
      user_id: Nullable(T.String()),
      callback_url: T.String(),
      output_data: T.Unknown(),
      error: Nullable(T.String()),
      created_at: T.String(),
      started_at: Nullable(T.String()),
      finished_at: Nullable(T.String()),
    },
    { title: 'claimed callback' },
  ),
)
type ClaimedRow = Static<typeof ClaimedRow.schema>
const TokenUserRow = rowType(T.Object({ id: T.String(), email: T.String() }, { title: 'callback user' }))

/** The callback body of an ended execution. */
export function callbackBody(r: ClaimedRow): Record<string, unknown> {
  const finished = r.finished_at ?? new Date().toISOString()
  // A job cancelled before it started has no start: it is reported as starting when it ended.
  const started = r.started_at ?? finished
  const success = r.status === 'completed'
  return {
    execution_id: r.id,
    trigger_id: r.trigger_id,
    function: { namespace: r.namespace, name: r.name },
    status: success ? 'success' : 'failure',
    started_at: started,
    finished_at: finished,
    duration_ms: Math.max(0, Date.parse(finished) - Date.parse(started)),
    ...(success ? { result: r.output_data ?? null } : {}),
    error: success ? null : (r.error ?? r.status),
  }
}

/**
 * Sends the callback of an ended execution once. Resolves with the recorded outcome, or
 * 'not-claimed' when there is nothing to send (no callback_url, not ended, or already claimed).
 * Never throws for delivery problems; a database error does reject.
 */
export async function deliverCallback(deps: CallbackDeps, state: Pick<JobState, 'id'>): Promise<CallbackOutcome> {
  const row = await maybeRow(
    deps.db,
    ClaimedRow,
    sql.unsafe`
    update executions set callback_status = 'sending', updated_at = now()
    where id = ${state.id}::uuid and callback_status is null and callback_url is not null and status in ('completed', 'failed', 'cancelled')
    returning id, namespace, name, status, trigger_id, user_id, callback_url, output_data, error, created_at, started_at, finished_at`,
  )
  if (row === null) return 'not-claimed'
  const log = deps.log.child({ mod: 'callback', execution: row.id })
  let outcome: { status: 'sent' | 'failed'; code: number | null }
  try {
    outcome = await post(deps, row)
  } catch (err) {
    log.warn({ err }, 'callback not delivered')
    outcome = { status: 'failed', code: null }
  }
  await deps.db
    .query(sql.unsafe`update executions set callback_status = ${outcome.status}, callback_response_code = ${outcome.code}, updated_at = now()
    where id = ${row.id}::uuid`)
  log.info({ callback_status: outcome.status, code: outcome.code }, 'callback attempted')
  return outcome
}

/**
 * The job mirror's listener that sends an ended execution's callback: only for a job with a
 * callback_url, off the mirror's path; a failure is logged, never thrown at the mirror.
 */
export function executionCallbacks(deps: CallbackDeps): JobFinishedListener {
  return (state) =>
    state.callback_url === null
      ? undefined
      : deliverCallback(deps, state).catch((err: unknown) =>
          deps.log.error({ err, job: state.id }, 'execution callback failed'),
        )
}

async function post(deps: CallbackDeps, row: ClaimedRow): Promise<{ status: 'sent' | 'failed'; code: number | null }> {
  // The token is the originating user's; a job without a (still active) user gets no callback.
  const user =
    row.user_id === null
      ? null
      : await maybeRow(
          deps.db,
          TokenUserRow,
          sql.unsafe`select id, email from users where id = ${row.user_id}::uuid and is_active`,
        )
  if (user === null) throw new Error('the execution has no active originating user to issue a token for')
  const token = await issueAccessToken(
    deps.config.SECRET_KEY,
    { sub: user.id, email: user.email },
    deps.config.ACCESS_TOKEN_EXPIRE_MINUTES,
  )
  const allow = parseHostList(deps.config.CALLBACK_URL_HOSTS)
  if (allow !== '*' && allow.length === 0) throw new Error('callbacks were disabled after the execution was accepted')
  const ca = extraCa(deps.config.OUTBOUND_EXTRA_CA_FILE)
  const res = await guardedFetch(
    row.callback_url,
    {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'user-agent': 'agent-platform-callback/1',
      },
      body: JSON.stringify(callbackBody(row)),
      timeoutMs: deps.timeoutMs ?? CALLBACK_TIMEOUT_MS,
      httpsOnly: true,
      allowHosts: allow,
      maxRedirects: 0,
      // Only the status counts; the body is not read (a slow or huge body cannot hold the slot).
      readBody: false,
    },
    { ...(ca === undefined ? {} : { ca }), ...(deps.lookup === undefined ? {} : { lookup: deps.lookup }) },
  )
  return { status: res.status >= 200 && res.status < 300 ? 'sent' : 'failed', code: res.status }
}
