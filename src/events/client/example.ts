import pg from 'pg'
import { subscribeExecutionEvents, type EventMeta, type ExecutionEvent } from 'agent-platform/events'

/*
 * An example backend service (docs/events-client.md; tests/events/client.test.ts runs it and
 * kills it with -9): it keeps a log of the platform's executions in its own Postgres database,
 * every event exactly once. The de-dup record and the effect commit in one transaction, so the
 * service may crash anywhere: what was committed is skipped when delivered again, what was not
 * is redone. Settings: NATS_URL, NATS_NKEY_FILE (the platform's DATA_DIR/nats/events.nk),
 * NATS_PREFIX, DATABASE_URL, and optionally DURABLE and FILTER.
 */
const setting = (name: string, fallback?: string): string => {
  const v = process.env[name] ?? fallback
  if (v === undefined) throw new Error(`${name} is not set`)
  return v
}
const db = new pg.Pool({ connectionString: setting('DATABASE_URL') })
await db.query(`
  create table if not exists handled_events (key text primary key, stream_seq bigint not null);
  create table if not exists execution_log (
    id bigserial primary key, execution_id uuid not null, revision bigint not null,
    status text not null, fn text not null, duration_ms integer, stream_seq bigint not null)`)

/** Whether an event was handled: its key was committed with its effect. */
const handledBefore = async (key: string): Promise<boolean> =>
  (await db.query('select 1 from handled_events where key = $1', [key])).rowCount === 1

/** The effect and the de-dup record in one transaction: both or neither. */
async function logExecution(event: ExecutionEvent, meta: EventMeta): Promise<void> {
  const client = await db.connect()
  try {
    await client.query('begin')
    const first = await client.query(
      'insert into handled_events (key, stream_seq) values ($1, $2) on conflict do nothing',
      [meta.dedupeKey, meta.streamSequence],
    )
    // a copy handled meanwhile (its key already committed): nothing to do
    if (first.rowCount === 1)
      await client.query(
        `insert into execution_log (execution_id, revision, status, fn, duration_ms, stream_seq)
         values ($1, $2, $3, $4, $5, $6)`,
        [
          event.execution_id,
          event.revision,
          event.status,
          `${event.namespace}/${event.name}`,
          event.duration_ms,
          meta.streamSequence,
        ],
      )
    await client.query('commit')
  } catch (err) {
    await client.query('rollback').catch(() => undefined)
    throw err // the event is delivered again after a backoff
  } finally {
    client.release()
  }
}

const sub = await subscribeExecutionEvents({
  servers: setting('NATS_URL'),
  credentials: { seedFile: setting('NATS_NKEY_FILE') },
  prefix: setting('NATS_PREFIX', ''),
  durable: setting('DURABLE', 'execution-log'),
  filter: setting('FILTER', '>'), // e.g. 'billing.*.completed'
  start: 'all', // a new durable begins with what the stream holds (24 h)
  dedupe: { has: handledBefore }, // no add(): the handler records the key itself
  handler: logExecution,
})

const stop = async (): Promise<void> => {
  await sub.stop() // the handlers in flight finish and acknowledge
  await db.end()
}
process.once('SIGTERM', () => void stop())
process.once('SIGINT', () => void stop())
process.stdout.write('ready\n') // what a supervisor (and the test) waits for
