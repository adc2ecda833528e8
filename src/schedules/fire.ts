import { Type as T } from '@sinclair/typebox'
import { SCHEDULE_FIRE_SUBJECT } from '../../actors/protocols/schedule.ts'
import { ScheduleFire, type Schedule, type ScheduleFireReply } from '../../schemas/triggers.ts'
import { loadPrincipal, type Principal } from '../auth/principal.ts'
import type { ChatService } from '../chats/service.ts'
import { enqueueFunction } from '../functions/invoke.ts'
import type { InvokeDeps } from '../feature/invoke-deps.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { activeFunction } from '../kinds/function/executable.ts'
import type { Config } from '../kernel/config.ts'
import { AppError, invalid } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { serveQueueRequests } from '../platform/queue-requests.ts'
import { maybeRow, rowType } from '../platform/typed-rows.ts'
import type { ResourceService } from '../resources/service.ts'
import type { ScheduleStore } from './store.ts'
import { tickJobId } from './tick-id.ts'

/*
 * Running one tick, asked by the schedule actor over NATS (`svc.schedules.fire`, queue group, any
 * resource-service replica). Idempotent per (schedule, tick), because the actor repeats a tick
 * whose answer it did not get (a takeover, a timeout):
 *   - the job id is `sched:<id>:<tick>` as a UUID v5 (tick-id.ts), so the job system keeps one job;
 *   - the `schedule_runs` row (primary key schedule id + tick) records the run; an agent tick is
 *     handled under an advisory lock on that key (`runAgent`), so it creates exactly one chat.
 * The owner's permission to run the target is checked now (execution time); a refused tick is
 * recorded with its reason (`refused`) rather than retried.
 */
export interface FireDeps {
  db: Db
  nc: NatsConnection
  names: NatsNames
  config: Config
  resources: ResourceService
  store: ScheduleStore
  invoke: InvokeDeps
  chats: ChatService
  log: Logger
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The reason a tick cannot run as the owner now, as text for the run history. */
const refusal = (err: unknown): string =>
  err instanceof AppError && err.status < 500 ? `${err.code}: ${err.message}` : ''

async function runFunction(d: FireDeps, s: Schedule, p: Principal, jobId: string): Promise<void> {
  const fn = await activeFunction(d.resources, p, s.target_namespace, s.target_name)
  const issues = validateAgainst(isObject(fn['input_schema']) ? fn['input_schema'] : {}, s.input_data, '/input_data')
  if (issues.length > 0)
    throw invalid("input_data does not match the function's input_schema", issues, 'function.invalid_input')
  await enqueueFunction(d.invoke, p, fn, {
    input: s.input_data,
    sync: false,
    triggerType: 'schedule',
    triggerId: s.id,
    id: jobId,
  })
}

export async function fireTick(d: FireDeps, req: ScheduleFire): Promise<ScheduleFireReply> {
  const s = await d.store.byId(req.schedule_id)
  if (s === null) return { ok: true, job_id: null, status: 'gone' }
  if (!s.is_active) return { ok: true, job_id: null, status: 'inactive' }
  const tick = new Date(req.tick).toISOString()
  const jobId = tickJobId(s.id, req.tick)
  const record = async (outcome: 'fired' | 'refused', error: string | null, chatId: string | null) => {
    await d.db
      .query(sql.unsafe`insert into schedule_runs (schedule_id, tick, job_id, chat_id, outcome, error) values (${s.id}::uuid, ${tick}::timestamptz, ${outcome === 'fired' ? jobId : null}, ${chatId}, ${outcome}, ${error})
      on conflict (schedule_id, tick) do nothing`)
  }
  let principal: Principal
  try {
    principal = await loadPrincipal(d.db, { sub: s.owner_id, via: 'jwt' })
  } catch (err) {
    const why = refusal(err) || 'the owner cannot be loaded'
    await record('refused', why, null)
    return { ok: false, error: why }
  }
  try {
    if (s.schedule_type === 'function') {
      // enqueue first: a crash before the row is written repeats the enqueue with the same job id
      await runFunction(d, s, principal, jobId)
      await record('fired', null, null)
    } else {
      await runAgent(d, s, principal, jobId, tick)
    }
    await trimRuns(d, s.id)
    return { ok: true, job_id: jobId, status: 'fired' }
  } catch (err) {
    const why = refusal(err)
    if (why === '') throw err
    await record('refused', why, null)
    return { ok: false, error: why }
  }
}

const ChatIdRow = rowType(
  T.Object({ chat_id: T.Union([T.String(), T.Null()]), outcome: T.String() }, { title: 'schedule run' }),
)

/**
 * An agent tick: a new chat titled "<name> <tick>" and `content` sent to it as the tick's job.
 * Under a session advisory lock on (schedule, tick) on one pooled connection (released with the
 * connection if this process dies), so two replicas never both create a chat for one tick. The
 * run row is written with the chat id before the message is sent; a retry that finds the row
 * sends again only while the tick's job has no state yet (the stream drops the repeated
 * `Nats-Msg-Id`), so a turn runs once.
 */
async function runAgent(d: FireDeps, s: Schedule, p: Principal, jobId: string, tick: string): Promise<void> {
  await d.db.connect(async (conn) => {
    await conn.query(sql.unsafe`select pg_advisory_lock(hashtext(${s.id}), hashtext(${tick}))`)
    try {
      const prev = await maybeRow(
        conn,
        ChatIdRow,
        sql.unsafe`select chat_id, outcome from schedule_runs where schedule_id = ${s.id}::uuid and tick = ${tick}::timestamptz`,
      )
      let chatId = prev?.chat_id ?? null
      if (prev !== null && (prev.outcome !== 'fired' || chatId === null)) return
      const fresh = chatId === null
      if (chatId === null) {
        const agent = await d.chats.agentFor(p, s.target_namespace, s.target_name)
        const chat = await d.chats.createChat(p, agent, { input: s.input_data, title: `${s.name} ${tick}` })
        chatId = chat.id
        await conn.query(
          sql.unsafe`insert into schedule_runs (schedule_id, tick, job_id, chat_id, outcome) values (${s.id}::uuid, ${tick}::timestamptz, ${jobId}, ${chatId}, 'fired')`,
        )
      } else if ((await d.invoke.store.get(jobId)) !== null) return
      await d.chats.queue(p, { id: chatId }, { content: s.content ?? '', channelId: null, fresh }, jobId)
    } finally {
      await conn.query(sql.unsafe`select pg_advisory_unlock(hashtext(${s.id}), hashtext(${tick}))`)
    }
  })
}

async function trimRuns(d: FireDeps, id: string): Promise<void> {
  await d.db.query(sql.unsafe`delete from schedule_runs where schedule_id = ${id}::uuid and tick < (
    select tick from schedule_runs where schedule_id = ${id}::uuid order by tick desc offset ${d.config.SCHEDULE_RUNS_KEPT - 1} limit 1)`)
}

/** Serves `svc.schedules.fire` (queue group: one replica answers each tick). */
export function serveScheduleFire(d: FireDeps): { stop(): Promise<void> } {
  return serveQueueRequests(
    {
      nc: d.nc,
      subject: d.names.subject(SCHEDULE_FIRE_SUBJECT),
      schema: ScheduleFire,
      refused: { ok: false, error: 'not a schedule fire request' },
      log: d.log,
      // no answer: the actor keeps the tick due and asks again (a database outage, a bug)
      failure: {
        msg: 'schedule tick failed; the actor retries it',
        fields: (req) => ({ schedule: req.schedule_id, tick: req.tick }),
      },
    },
    (req): Promise<ScheduleFireReply> => fireTick(d, req),
  )
}
