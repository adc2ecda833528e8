import { setTimeout as sleep } from 'node:timers/promises'
import { DB_TRIGGER_POLL_SUBJECT } from '../../actors/protocols/db-trigger.ts'
import { DbTriggerPoll, type DbTriggerInput, type DbTriggerPollReply } from '../../schemas/db-triggers.ts'
import { can, loadPrincipal, type Principal } from '../auth/principal.ts'
import type { ConnectionPools, ConnectionRecord } from '../data/pools.ts'
import type { DataPool } from '../data/drivers/types.ts'
import { enqueueFunction } from '../functions/invoke.ts'
import type { InvokeDeps } from '../feature/invoke-deps.ts'
import { databaseConnectionKind } from '../kinds/database-connection/kind.ts'
import { activeFunction } from '../kinds/function/executable.ts'
import type { Config } from '../kernel/config.ts'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { serveQueueRequests } from '../platform/queue-requests.ts'
import type { ResourceService } from '../resources/service.ts'
import { uuidV5 } from '../kernel/uuid.ts'
import { cutBatch, readRow, rereadBatch, RowTooLargeError, type Batch, type ReadRow } from './batch.ts'
import { deliverable, operationPlan, tableFacts, type OperationPlan } from './operations.ts'
import { pollRows } from './store.ts'
import {
  BOOKMARK_TYPES,
  maxStatement,
  reachStatement,
  rowsStatement,
  writersStatement,
  type Target,
} from './target-sql.ts'

/*
 * One poll of one database trigger, asked by its actor over NATS (`svc.dbtriggers.poll`, queue
 * group `svc`: any resource-service replica). Exactly once per row, by three layers:
 *
 *  1. One poll of a trigger at a time: a session advisory lock on the trigger (try-lock; a second
 *     poll answers `busy` and its actor asks again shortly). It goes with the connection if this
 *     process dies.
 *  2. The fence: the actor sends its lease revision; the poll first claims the trigger with it
 *     (`update … set fence = $f where fence <= $f`) and every later write is conditional on it, so a
 *     host that lost its lease (a lower revision) is refused (`stale`) before it reads a row.
 *  3. The batch is recorded before its job is enqueued (`pending_until`), the job id is the UUID v5
 *     of `dbtrig:<trigger>:<epoch>:<bookmark before>:<bookmark after>`, and the bookmark moves only
 *     after the enqueue was accepted. A poll that died in between (this process killed) leaves the
 *     batch pending: the next poll reads exactly (bookmark, pending_until] again and enqueues the
 *     same job id, which the job system keeps once (JOBS drops the repeated Nats-Msg-Id; later, the
 *     claim finds the job's state).
 *
 * The owner's right to run the function and to use the connection is checked at every poll
 * (execution time), as the owner. Failures are written to error_message and answered `ok: false`
 * (the actor backs off).
 */
export interface PollDeps {
  db: Db
  nc: NatsConnection
  names: NatsNames
  config: Config
  resources: ResourceService
  pools: ConnectionPools
  invoke: Pick<InvokeDeps, 'config' | 'enqueue'>
  log: Logger
}

const reply = (status: string, rows = 0, more = false, jobId: string | null = null): DbTriggerPollReply => ({
  ok: true,
  status,
  rows,
  more,
  job_id: jobId,
})

class Stale extends Error {}

/** The connection, if it is a Postgres one the owner may use now. */
export async function usableConnection(
  d: Pick<PollDeps, 'resources'>,
  p: Principal,
  id: string,
): Promise<ConnectionRecord> {
  const c = await d.resources.byId(databaseConnectionKind, id)
  if (c === null) throw AppError.of('database.connection_not_found', `database connection ${id} does not exist`)
  const permission = `platform.database-connections/${c.name}.use:all`
  if (!can(p, permission))
    throw AppError.of(
      'db_trigger.connection_forbidden',
      `the trigger's owner may not use database connection ${c.name} (${permission})`,
    )
  if (c['connection_type'] !== 'postgresql')
    throw AppError.of(
      'db_trigger.unsupported_connection',
      `database triggers poll PostgreSQL connections; ${c.name} is ${String(c['connection_type'])}`,
    )
  return c
}

/**
 * The bookmark's cast type, whether the xmin horizon applies (a table, not a view), and how rows
 * get their operation (operations.ts; refused when the table cannot tell the trigger's operations).
 */
async function detectColumn(
  d: PollDeps,
  pool: DataPool,
  t: Target,
  operations: readonly string[],
): Promise<{ cast: string; horizon: boolean; plan: OperationPlan }> {
  const found = await tableFacts(pool, t, d.config.DB_TRIGGER_STATEMENT_TIMEOUT_MS)
  const cast = Object.hasOwn(BOOKMARK_TYPES, found.udt) ? BOOKMARK_TYPES[found.udt] : undefined
  if (cast === undefined)
    throw AppError.of(
      'db_trigger.unsupported_column',
      `poll column ${t.column} is of type ${found.udt}; a bookmark needs an integer, numeric, float, date or timestamp column`,
    )
  return {
    cast,
    horizon: d.config.DB_TRIGGER_COMMIT_HORIZON && found.tableType === 'BASE TABLE',
    plan: operationPlan(operations, t.created ?? null, found),
  }
}

/**
 * The rows after the bookmark that a poll of a Postgres table may deliver (the commit horizon).
 * A transaction takes its poll value (a `nextval()` default, a `now()`) before it commits, and
 * before it has an xid when the value is a default of the very INSERT that writes; such a
 * transaction is in no snapshot's list of open ones. So a snapshot can show a higher value
 * committed while a lower one is still to come, and a bookmark moved past it would skip that row.
 *  1. One statement reads how far this poll may go (`v`: the `limit`-th value after the bookmark)
 *     and, after its snapshot, which other sessions hold a write lock on the table. Every
 *     transaction still open that took a value up to `v` is one of them: it locked the table
 *     when its statement was parsed, before it took its value, and it took that value before
 *     `v`'s writer took `v` (a sequence hands out increasing values), which had committed.
 *  2. The poll waits, up to DB_TRIGGER_WRITER_WAIT_MS, until each of them has ended; if one has
 *     not, the poll delivers nothing (`held`) and the next one tries again.
 *  3. It reads (bookmark, v] afresh: no value up to `v` can be committed after this read.
 * The xmin test of that read (target-sql.ts) still holds back rows newer than a transaction open
 * anywhere in the cluster, for a value taken by a transaction that locked the table only later
 * (a `now()` taken at its start, before it wrote here).
 */
async function settledRead(
  pool: DataPool,
  t: Target,
  cast: string,
  o: { after: string | null; limit: number; waitMs: number; timeoutMs: number },
): Promise<ReadRow[] | 'held'> {
  const reach = (await pool.run(reachStatement(t, cast, o))).rows[0]
  const v = reach?.['v']
  if (typeof v !== 'string') return []
  const writers = JSON.parse(String(reach?.['writers'] ?? '[]')) as string[]
  if (writers.length > 0 && !(await writersEnded(pool, writers, o.waitMs, o.timeoutMs))) return 'held'
  return (
    await pool.run(
      rowsStatement(t, cast, { after: o.after, upTo: v, limit: o.limit, horizon: true, timeoutMs: o.timeoutMs }),
    )
  ).rows.map(readRow)
}

/** Whether every one of `writers` ended within `waitMs` (checked at growing intervals, 1 ms to 20 ms). */
async function writersEnded(
  pool: DataPool,
  writers: readonly string[],
  waitMs: number,
  timeoutMs: number,
): Promise<boolean> {
  const until = Date.now() + waitMs
  for (let pause = 1; ; pause = Math.min(pause * 2, 20)) {
    const open = Number((await pool.run(writersStatement(writers, timeoutMs))).rows[0]?.['n'] ?? 0)
    if (open === 0) return true
    if (Date.now() + pause > until) return false
    await sleep(pause)
  }
}

export async function pollTrigger(d: PollDeps, req: DbTriggerPoll): Promise<DbTriggerPollReply> {
  return d.db.connect(async (conn) => {
    const lock = sql.unsafe`hashtext('db_triggers'), hashtext(${req.trigger_id})`
    if ((await conn.oneFirst(sql.unsafe`select pg_try_advisory_lock(${lock})`)) !== true) return reply('busy')
    try {
      const q = pollRows(conn, req.trigger_id, req.fence)
      const row = await q.load()
      if (row === null) return reply('gone')
      if (!row.is_active) return reply('inactive')
      // the lock keeps other polls out, so an equal fence needs no write
      if (row.fence > req.fence || (row.fence < req.fence && !(await q.claim()))) return reply('stale')
      try {
        return await pollOnce(d, q, row)
      } catch (err) {
        if (err instanceof Stale) return reply('stale')
        const known = err instanceof AppError && err.code !== 'internal'
        const message = known ? `${err.code}: ${err.message}` : 'internal error while polling (see the service log)'
        if (!known) d.log.error({ err, trigger: row.id }, 'database trigger poll failed')
        // recorded for the owner (GET shows it); a poll that cannot even record it still answers
        await q
          .failed(message)
          .catch((e: unknown) => d.log.warn({ err: e, trigger: row.id }, 'recording a database trigger error failed'))
        return { ok: false, error: message }
      }
    } finally {
      await conn.query(sql.unsafe`select pg_advisory_unlock(${lock})`)
    }
  })
}

type Row = NonNullable<Awaited<ReturnType<ReturnType<typeof pollRows>['load']>>>

async function pollOnce(d: PollDeps, q: ReturnType<typeof pollRows>, row: Row): Promise<DbTriggerPollReply> {
  const must = (ok: boolean) => {
    if (!ok) throw new Stale()
  }
  const p = await loadPrincipal(d.db, { sub: row.owner_id, via: 'jwt' })
  // the function the trigger calls, if the owner may run it now
  const fn = await activeFunction(d.resources, p, row.function_namespace, row.function_name)
  const connection = await usableConnection(d, p, row.database_connection_id)
  const t: Target = {
    schema: row.schema_name,
    table: row.table_name,
    column: row.poll_column,
    created: row.created_column,
  }
  const timeoutMs = d.config.DB_TRIGGER_STATEMENT_TIMEOUT_MS

  let plan: OperationPlan = 'change'
  const batch = await d.pools.withConnection(
    connection.id,
    async (pool): Promise<Batch | 'initialized'> => {
      const detected = await detectColumn(d, pool, t, row.operations)
      const { cast, horizon } = detected
      plan = detected.plan
      if (!row.bookmark_set) {
        // first activation: no backfill
        const max = (await pool.run(maxStatement(t, timeoutMs))).rows[0]?.['v']
        must(await q.initialize(typeof max === 'string' ? max : null))
        return 'initialized'
      }
      if (row.pending_until !== null) {
        const read = await pool.run(
          rowsStatement(t, cast, {
            after: row.last_poll_value,
            upTo: row.pending_until,
            limit: row.batch_size,
            horizon: false,
            timeoutMs,
          }),
        )
        return rereadBatch(read.rows.map(readRow), row.pending_until, row.batch_size)
      }
      const read = horizon
        ? await settledRead(pool, t, cast, {
            after: row.last_poll_value,
            limit: row.batch_size + 1,
            waitMs: d.config.DB_TRIGGER_WRITER_WAIT_MS,
            timeoutMs,
          })
        : (
            await pool.run(
              rowsStatement(t, cast, {
                after: row.last_poll_value,
                upTo: null,
                limit: row.batch_size + 1,
                horizon,
                timeoutMs,
              }),
            )
          ).rows.map(readRow)
      if (read === 'held') return { rows: [], inserted: [], until: null, more: false, held: true, splitTie: false }
      try {
        return cutBatch(read, row.batch_size, d.config.DB_TRIGGER_MAX_BATCH_BYTES)
      } catch (err) {
        if (err instanceof RowTooLargeError) throw AppError.of('db_trigger.row_too_large', err.message)
        throw err
      }
    },
    connection,
  )
  if (batch === 'initialized') return reply('initialized')
  if (batch.until === null) {
    must(await q.idle())
    return reply(batch.held ? 'held' : 'idle', 0, batch.more)
  }
  if (batch.splitTie)
    d.log.warn(
      { trigger: row.id, bookmark: batch.until, batch_size: row.batch_size },
      'more rows share one poll value than batch_size: the rest of that value is skipped (use a unique poll column)',
    )
  // the rows of the operations the trigger asks for (with a created column an UPDATE-only trigger skips inserted rows, and the reverse)
  const delivered = deliverable(plan, row.operations, batch)
  if (delivered.rows.length === 0) {
    // a pending batch whose rows are gone, or none of the trigger's operations: nothing to call, the bookmark moves on
    must(await q.advance(batch.until))
    return reply('idle', 0, true)
  }
  must(await q.pending(batch.until))
  const jobId = uuidV5(`dbtrig:${row.id}:${String(row.bookmark_epoch)}:${row.last_poll_value ?? ''}:${batch.until}`)
  const input: DbTriggerInput = {
    table: `${row.schema_name}.${row.table_name}`,
    ...delivered,
    poll_column: row.poll_column,
    count: delivered.rows.length,
    timestamp: new Date().toISOString(),
  }
  await enqueueFunction(d.invoke, p, fn, {
    input,
    sync: false,
    triggerType: 'database_trigger',
    triggerId: row.id,
    id: jobId,
  })
  must(await q.advance(batch.until))
  return reply('fired', delivered.rows.length, batch.more, jobId)
}

/** Serves `svc.dbtriggers.poll` (queue group: one replica answers each poll). */
export function serveTriggerPolls(d: PollDeps): { stop(): Promise<void> } {
  return serveQueueRequests(
    {
      nc: d.nc,
      subject: d.names.subject(DB_TRIGGER_POLL_SUBJECT),
      schema: DbTriggerPoll,
      refused: { ok: false, error: 'not a database trigger poll request' },
      log: d.log,
      // the platform database is unreachable (the lock, the row): the actor gets no answer and backs off
      failure: {
        msg: 'database trigger poll failed before it started',
        fields: (req) => ({ trigger: req.trigger_id }),
      },
    },
    (req): Promise<DbTriggerPollReply> => pollTrigger(d, req),
  )
}
