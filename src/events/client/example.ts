import pg from 'pg'
import { subscribeExecutionEvents } from 'agent-platform/events'

/*
 * An example backend service (docs/events-client.md; tests/events/client.test.ts runs it and
 * kills it with -9): it keeps a log of the platform's executions in its own Postgres database,
 * every event exactly once. The de-dup record and the effect commit in one transaction, so the
 * service can crash anywhere: what was committed is skipped when delivered again, what was not
 * is redone. Run it: `node --import tsx example.ts` with NATS_URL, NATS_NKEY_FILE (the platform's
 * DATA_DIR/nats/events.nk), NATS_PREFIX and DATABASE_URL set.
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

const sub = await subscribeExecutionEvents({
  servers: setting('NATS_URL'),
  credentials: { seedFile: setting('NATS_NKEY_FILE') },
  prefix: setting('NATS_PREFIX', ''),
  durable: setting('DURABLE', 'execution-log'),
  filter: setting('FILTER', '>'), // e.g. 'billing.*.completed'
  start: 'all', // a new durable begins with what the stream holds (24 h)
  // the handler records the key itself, with its effect: has() only, no add()
  dedupe: {
    has: async (key) => (await db.query('select 1 from handled_events where key = $1', [key])).rowCount === 1,
  },
  handler: async (event, meta) => {
    const client = await db.connect()
    try {
      await client.query('begin')
      const first = await client.query(
        'insert into handled_events (key, stream_seq) values ($1, $2) on conflict do nothing',
        [meta.dedupeKey, meta.streamSequence],
      )
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
      await client.query('rollback')
      throw err // delivered again after a backoff
    } finally {
      client.release()
    }
  },
})

const stop = async () => {
  await sub.stop() // handlers in flight finish and acknowledge
  await db.end()
}
process.once('SIGTERM', () => void stop())
process.once('SIGINT', () => void stop())
process.stdout.write('ready\n') // what a supervisor (and the test) waits for
