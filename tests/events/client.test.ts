import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node'
import pg from 'pg'
import t from 'tap'
// the package's own export, resolved through its self-reference as a consumer's import would be
import {
  fileDedupe,
  memoryDedupe,
  resetDurable,
  subscribeExecutionEvents,
  type EventMeta,
  type ExecutionEvent,
  type NatsCredentials,
} from 'agent-platform/events'
import { createLogger } from '../../src/kernel/log.ts'
import { inboxPrefixOf, readSeedFile } from '../../src/platform/nats-credentials.ts'
import { kill9, spawnReady } from '../helpers/child.ts'
import { eventually } from '../helpers/eventually.ts'
import { externalPostgres } from '../helpers/external-pg.ts'
import {
  root,
  singleNodeEnv,
  startSingleNode,
  stopWith,
  superadminToken,
  tempDataDir,
  type SingleNode,
} from '../platform/single-node.ts'

/*
 * The events client (`agent-platform/events`) against a single-node platform, on the generated
 * `events` credentials: the example service (src/events/client/example.ts) killed with -9 idle, in
 * the middle of a handler's transaction and while it works through a backlog, and restarted —
 * every event the EVENTS stream holds for the test's executions is in its log exactly once. Then
 * replays from a stream sequence and from a time, the file de-dup store across a reset (and
 * without its file), a failing handler retried after its backoff or given up, payloads of another
 * schema or none, and that the `events` user creates no stream.
 */
t.setTimeout(480_000)
const dataDir = tempDataDir(t)
const env = singleNodeEnv(dataDir)
const seedFile = join(dataDir, 'nats', 'events.nk')
const credentials: NatsCredentials = { seedFile }
const EXAMPLE = join(root, 'src', 'events', 'client', 'example.ts')
let node: SingleNode
let token: string
let natsUrl: string
let platformNc: NatsConnection
const logger = createLogger({ level: 'silent' })
// the file de-dup stores of the in-process subscriptions
const storeDir = mkdtempSync(join(tmpdir(), 'events-client-'))
t.teardown(() => rmSync(storeDir, { recursive: true, force: true }))

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const r = await fetch(`${node.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await r.text()
  return { status: r.status, body: text === '' ? {} : (JSON.parse(text) as unknown) }
}

/** Starts `n` executions of ev/tick (async) and returns their ids. */
async function runs(n: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const r = await call('POST', '/functions/ev/tick/execute/async', { input: { i } })
    if (r.status !== 202) throw new Error(`execute/async: ${String(r.status)} ${JSON.stringify(r.body)}`)
    ids.push((r.body as { execution_id: string }).execution_id)
  }
  return ids
}

interface StoredEvent {
  seq: number
  time: Date
  event: ExecutionEvent
}

/** What the EVENTS stream holds for ev/*, read message by message as the platform user: the truth. */
async function streamEvents(): Promise<StoredEvent[]> {
  const jsm = await jetstreamManager(platformNc)
  const info = await jsm.streams.info('EVENTS')
  const out: StoredEvent[] = []
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage('EVENTS', { seq })
    if (m === null || !m.subject.startsWith('events.execution.ev.')) continue
    out.push({ seq, time: m.time, event: m.json<ExecutionEvent>() })
  }
  return out
}

/** Waits until every id has its `completed` event in the stream; returns the stream's ev/* events. */
function allCompleted(ids: readonly string[]): Promise<StoredEvent[]> {
  return eventually(
    async () => {
      const events = await streamEvents()
      const done = new Set(events.filter((e) => e.event.status === 'completed').map((e) => e.event.execution_id))
      return ids.every((id) => done.has(id)) ? events : undefined
    },
    `${String(ids.length)} executions to complete`,
    120_000,
    200,
  )
}

const keyOf = (e: Pick<ExecutionEvent, 'execution_id' | 'revision'>) => `${e.execution_id}.${String(e.revision)}`

t.before(async () => {
  node = await startSingleNode(env)
  token = superadminToken(env)
  natsUrl = (JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')) as { natsUrl: string }).natsUrl
  platformNc = await connect({
    servers: natsUrl,
    authenticator: nkeyAuthenticator(readSeedFile(join(dataDir, 'nats', 'platform.nk'))),
  })
  const fn = await call('POST', '/api/v1/functions', {
    namespace: 'ev',
    name: 'tick',
    code: 'def handler(input, context):\n    return {"i": input["i"]}\n',
  })
  if (fn.status !== 201) throw new Error(JSON.stringify(fn.body))
})
t.teardown(async () => {
  await platformNc?.close()
  if (node !== undefined) await stopWith(node.child, 'SIGINT')
})

t.test('the example service, killed with -9 three times, logs every event exactly once', async (t) => {
  const pgdb = await externalPostgres(t, 'events_client')
  const service = (durable = 'execution-log') =>
    spawnReady(t, EXAMPLE, {
      NATS_URL: natsUrl,
      NATS_NKEY_FILE: seedFile,
      NATS_PREFIX: '',
      DATABASE_URL: pgdb.url,
      DURABLE: durable,
      FILTER: 'ev.>',
      LOG_LEVEL: 'warn',
    })
  const logged = async () => Number((await pgdb.sql<{ n: string }>('select count(*) as n from execution_log'))[0]?.n)

  // 1. live: the service follows the runs as they happen, then dies between two events
  const a = await service()
  const first = await runs(10)
  const truth1 = await allCompleted(first)
  await eventually(async () => ((await logged()) === truth1.length ? true : undefined), 'the live events logged')
  await kill9(a.proc)

  // 2. a backlog gathers while nobody consumes
  const second = await runs(20)
  const truth2 = await allCompleted(second)
  t.ok(truth2.length >= truth1.length + 40, 'each execution published at least running and completed')

  // 3. killed inside a handler's transaction: its de-dup key is inserted, its log row waits on a lock
  const locker = new pg.Client({ connectionString: pgdb.url })
  await locker.connect()
  await locker.query('begin')
  await locker.query('lock table execution_log in share mode')
  const b = await service()
  await eventually(async () => {
    const r = await locker.query<{ n: string }>(
      "select count(*) as n from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'execution_log' and not l.granted",
    )
    return Number(r.rows[0]?.n) > 0 ? true : undefined
  }, 'a handler to wait on the locked log')
  await kill9(b.proc)
  await locker.query('rollback')
  await locker.end()
  t.equal(await logged(), truth1.length, 'the killed transaction left nothing behind')

  // 4. killed while it works through the backlog (wherever it is when the count moves)
  const c = await service()
  const before = truth1.length
  await eventually(
    async () => ((await logged()) >= before + 10 ? true : undefined),
    'the backlog to be taken up',
    60_000,
    2,
  )
  await kill9(c.proc)
  t.comment(
    `killed with ${String((await logged()) - before)} of the backlog's ${String(truth2.length - before)} events logged`,
  )

  // 5. the last restart finishes the backlog and follows new runs live
  const d = await service()
  const third = await runs(10)
  const truth = await allCompleted([...first, ...second, ...third])
  await eventually(
    async () => ((await logged()) >= truth.length ? true : undefined),
    `all ${String(truth.length)} events logged`,
    60_000,
  )
  const rows = await pgdb.sql<{ execution_id: string; revision: string; status: string; stream_seq: string }>(
    'select execution_id, revision, status, stream_seq from execution_log order by stream_seq',
  )
  const seen = rows.map((r) => `${r.execution_id}.${r.revision}`)
  t.equal(new Set(seen).size, seen.length, 'no event was handled twice')
  t.same(
    [...seen].sort(),
    truth.map((e) => keyOf(e.event)).sort(),
    'every event of the stream was handled: none missed, none extra',
  )
  for (const id of [...first, ...second, ...third]) {
    const statuses = rows.filter((r) => r.execution_id === id).map((r) => r.status)
    if (!statuses.includes('completed') || statuses.filter((s) => s === 'completed').length !== 1)
      t.fail(`execution ${id} logged ${statuses.join(', ')}`)
  }
  t.equal(
    Number((await pgdb.sql<{ n: string }>('select count(*) as n from handled_events'))[0]?.n),
    rows.length,
    'one de-dup record per logged event',
  )
  // stopping drains: the service exits by itself on SIGTERM
  const exited = new Promise<number | null>((r) => d.proc.once('exit', r))
  d.proc.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM stops the service cleanly')
})

/** Handles events of a subscription into a list until `until` says it has them all. */
async function collect(
  opts: Omit<Parameters<typeof subscribeExecutionEvents>[0], 'handler' | 'servers' | 'credentials' | 'logger'>,
  until: (got: { event: ExecutionEvent; meta: EventMeta }[]) => boolean,
): Promise<{ event: ExecutionEvent; meta: EventMeta }[]> {
  const got: { event: ExecutionEvent; meta: EventMeta }[] = []
  const sub = await subscribeExecutionEvents({
    servers: natsUrl,
    credentials,
    logger,
    ...opts,
    handler: async (event, meta) => {
      got.push({ event, meta })
    },
  })
  try {
    await eventually(async () => (until(got) ? true : undefined), `${opts.durable} to receive its events`)
  } finally {
    await sub.stop()
  }
  return got
}

t.test('replay: a new durable from a stream sequence, another from a time', async (t) => {
  const truth = await streamEvents()
  t.ok(truth.length > 20, 'the stream holds the events of the first test')
  const mid = truth[Math.floor(truth.length / 2)] as StoredEvent
  const tail = truth.filter((e) => e.seq >= mid.seq)
  const fromSeq = await collect(
    { durable: 'from-seq', filter: 'ev.>', start: { sequence: mid.seq }, dedupe: false },
    (got) => got.length >= tail.length,
  )
  t.same(
    fromSeq.map((g) => g.meta.streamSequence),
    tail.map((e) => e.seq),
    'from the sequence on, in order',
  )
  t.same(fromSeq[0]?.event, mid.event, 'the first one is the event at that sequence')

  // a time: the first event of a later millisecond than the one before it (stream times are ns)
  const i = truth.findIndex(
    (e, k) => k > truth.length / 3 && e.time.getTime() > (truth[k - 1] as StoredEvent).time.getTime(),
  )
  const at = truth[i] as StoredEvent
  const fromTime = truth.slice(i)
  const got = await collect(
    { durable: 'from-time', filter: 'ev.>', start: { time: at.time }, dedupe: false },
    (g) => g.length >= fromTime.length,
  )
  t.same(
    got.map((g) => g.meta.streamSequence),
    fromTime.map((e) => e.seq),
    'from the first event at or after the time, none before',
  )
  t.equal(got[0]?.meta.publishedAt.getTime(), at.time.getTime())

  // an existing durable keeps its position: another start is not applied
  const again = await subscribeExecutionEvents({
    servers: natsUrl,
    credentials,
    logger,
    durable: 'from-seq',
    filter: 'ev.>',
    start: 'all',
    dedupe: false,
    handler: async () => {
      throw new Error('nothing is left for this durable')
    },
  })
  const js = await jetstreamManager(platformNc)
  t.equal((await js.consumers.info('EVENTS', 'from-seq')).num_pending, 0, 'the durable went on from where it stopped')
  await again.stop()
  // another filter on the same durable is refused (a reset moves it)
  await t.rejects(
    subscribeExecutionEvents({
      servers: natsUrl,
      credentials,
      logger,
      durable: 'from-seq',
      filter: 'other.>',
      handler: async () => {},
    }),
    /reset it/,
  )
  t.equal(await resetDurable({ servers: natsUrl, credentials, durable: 'from-seq' }), true, 'reset deletes it')
  t.equal(
    await resetDurable({ servers: natsUrl, credentials, durable: 'from-seq' }),
    false,
    'and again: nothing to delete',
  )
})

t.test('the file de-dup store: a reset replays nothing handled, unless the file goes', async (t) => {
  const truth = await streamEvents()
  const keys = new Set(truth.map((e) => keyOf(e.event)))
  const file = join(storeDir, 'file.keys')
  // a handler failing its first delivery of one event: delivered again after the backoff
  const flaky = keyOf((truth[3] as StoredEvent).event)
  const deliveries: number[] = []
  const handled: string[] = []
  const handler = async (event: ExecutionEvent, meta: EventMeta) => {
    if (meta.dedupeKey === flaky) {
      deliveries.push(meta.deliveryCount)
      if (meta.deliveryCount === 1) throw new Error('a passing failure')
    }
    handled.push(keyOf(event))
  }
  const base = { servers: natsUrl, credentials, logger, durable: 'file', filter: 'ev.>', start: 'all' as const }
  const errors: unknown[] = []
  const sub = await subscribeExecutionEvents({
    ...base,
    dedupe: fileDedupe(file),
    handler,
    backoffMs: [200],
    concurrency: 4,
    onError: (err) => errors.push(err),
  })
  await eventually(async () => (handled.length >= keys.size ? true : undefined), 'every event handled once')
  await sub.stop()
  t.same(new Set(handled), keys, 'every event')
  t.equal(handled.length, keys.size, 'once')
  t.same(deliveries, [1, 2], 'the failed event came back, once')
  t.equal(errors.length, 1, 'the failure reached onError')
  t.match(sub.stats(), { handled: keys.size, failed: 1 })
  t.equal(readFileSync(file, 'utf8').trim().split('\n').length, keys.size, 'one line per key in the file')
  t.notOk(existsSync(`${file}.lock`), 'stop() released the file')

  // the keys are in the file: a replay of everything (a new store on the same file) skips every event
  await resetDurable({ servers: natsUrl, credentials, durable: 'file' })
  const replayed: string[] = []
  const skipping = await subscribeExecutionEvents({
    ...base,
    dedupe: fileDedupe(file),
    handler: async (e) => {
      replayed.push(keyOf(e))
    },
  })
  await eventually(async () => (skipping.stats().duplicates >= keys.size ? true : undefined), 'the replay skipped')
  await skipping.stop()
  t.same(replayed, [], 'no handler call for an event handled before')

  // without the file: the next replay handles them again
  await resetDurable({ servers: natsUrl, credentials, durable: 'file' })
  rmSync(file)
  const again = await collect(
    { durable: 'file', filter: 'ev.>', start: 'all', dedupe: fileDedupe(file) },
    (g) => g.length >= keys.size,
  )
  t.equal(again.length, keys.size, 'handled again once the file was gone')

  // one process per file: a live owner keeps another out, a dead one's lock is taken over
  writeFileSync(`${file}.lock`, String(node.child.pid))
  t.throws(() => fileDedupe(file), /one process per file/)
  writeFileSync(`${file}.lock`, '999999999')
  const taken = fileDedupe(file)
  t.equal(await taken.has(keyOf((truth[0] as StoredEvent).event)), true, 'a lock left by a dead process is taken over')
  await taken.close?.()

  // a store of one's own (here in memory) sees a duplicate delivery too
  const store = memoryDedupe()
  await store.add?.(keyOf((truth[0] as StoredEvent).event))
  const mem = await collect(
    { durable: 'mem', filter: 'ev.>', start: 'all', dedupe: store },
    (g) => g.length >= keys.size - 1,
  )
  t.notOk(
    mem.some((g) => g.meta.dedupeKey === keyOf((truth[0] as StoredEvent).event)),
    'the key already in the store is skipped',
  )
})

t.test('payloads: another schema skipped, an invalid one given up, a valid one handled', async (t) => {
  const js = jetstream(platformNc)
  const valid = (await streamEvents())[0]?.event as ExecutionEvent
  const subject = 'events.execution.junk.fn.completed'
  await js.publish(subject, 'not json')
  await js.publish(subject, JSON.stringify({ ...valid, schema: 'platform.execution.v2' }))
  await js.publish(subject, JSON.stringify({ ...valid, execution_id: 'not-a-uuid' }))
  await js.publish(subject, JSON.stringify({ ...valid, namespace: 'junk', name: 'fn' }))
  const errors: { err: unknown; gaveUp: boolean }[] = []
  const got: ExecutionEvent[] = []
  const sub = await subscribeExecutionEvents({
    servers: natsUrl,
    credentials,
    logger,
    durable: 'junk',
    filter: 'junk.>',
    start: 'all',
    dedupe: false,
    onError: (err, info) => errors.push({ err, gaveUp: info.gaveUp }),
    handler: async (e) => {
      got.push(e)
    },
  })
  await eventually(async () => (got.length === 1 && sub.stats().invalid === 2 ? true : undefined), 'the four payloads')
  t.match(sub.stats(), { handled: 1, invalid: 2, otherSchema: 1, failed: 0 })
  t.equal(got[0]?.namespace, 'junk', 'the valid one reached the handler')
  t.same(
    errors.map((e) => e.gaveUp),
    [true, true],
    'the invalid ones were reported, given up',
  )
  t.match(String(errors[1]?.err), /execution_id/, 'saying what is wrong')
  // acknowledgements are not answered: wait until the server has taken them all
  await eventually(async () => {
    const info = await (await jetstreamManager(platformNc)).consumers.info('EVENTS', 'junk')
    return info.num_ack_pending + info.num_pending === 0 ? true : undefined
  }, 'nothing of them waiting for a redelivery')

  await sub.stop()

  // a handler that keeps failing: given up after maxAttempts, terminated, not delivered again
  const attempts: number[] = []
  const gaveUp: boolean[] = []
  const failing = await subscribeExecutionEvents({
    servers: natsUrl,
    credentials,
    logger,
    durable: 'give-up',
    filter: 'junk.>',
    start: 'all',
    dedupe: false,
    backoffMs: [50, 100],
    maxAttempts: 3,
    // the invalid payloads are reported too: only the handler's failures count here
    onError: (_err, info) => (info.event === undefined ? undefined : gaveUp.push(info.gaveUp)),
    handler: async (_e, meta) => {
      attempts.push(meta.deliveryCount)
      throw new Error('always')
    },
  })
  await eventually(async () => {
    const info = await (await jetstreamManager(platformNc)).consumers.info('EVENTS', 'give-up')
    return gaveUp.length === 3 && info.num_ack_pending + info.num_pending === 0 ? true : undefined
  }, 'the failing event given up')
  await failing.stop()
  t.same(attempts, [1, 2, 3], 'three attempts')
  t.same(gaveUp, [false, false, true], 'the third one gave up')

  // an existing durable takes the bounds of the next subscribe; a reset ends a running subscription
  const bounded = await subscribeExecutionEvents({
    servers: natsUrl,
    credentials,
    logger,
    durable: 'junk',
    filter: 'junk.>',
    maxAckPending: 7,
    ackWaitMs: 12_000,
    dedupe: false,
    handler: async () => {},
  })
  const updated = await (await jetstreamManager(platformNc)).consumers.info('EVENTS', 'junk')
  t.match(updated.config, { max_ack_pending: 7, ack_wait: 12_000 * 1e6 }, 'the bounds were updated')
  await resetDurable({ servers: natsUrl, credentials, durable: 'junk' })
  t.type(await bounded.closed, Error, 'the subscription on the deleted durable ended with an error')
  await bounded.stop()
})

t.test('the events user creates no stream (why the default de-dup store is a file)', async (t) => {
  const nc = await connect({
    servers: natsUrl,
    authenticator: nkeyAuthenticator(readSeedFile(seedFile)),
    inboxPrefix: inboxPrefixOf('events'),
    maxReconnectAttempts: 0,
  })
  t.teardown(() => nc.close())
  const outcome = (subject: string, data = '{}') =>
    nc.request(subject, data, { timeout: 5_000 }).then(
      () => 'answered',
      (err: unknown) => String(err),
    )
  // a bucket is a stream, and a permission cannot limit a stream's subjects: one on _INBOX.> would read every reply
  t.match(
    await outcome(
      '$JS.API.STREAM.CREATE.KV_EVENTS_DEDUPE',
      JSON.stringify({ name: 'KV_EVENTS_DEDUPE', subjects: ['_INBOX.>'] }),
    ),
    /Permissions Violation/,
    'creates no bucket',
  )
  t.match(await outcome('$JS.API.STREAM.PURGE.EVENTS'), /Permissions Violation/, 'cannot purge the events')
  t.match(await outcome('$JS.API.STREAM.DELETE.EVENTS'), /Permissions Violation/, 'cannot delete them')
  t.equal(await outcome('$JS.API.STREAM.INFO.EVENTS'), 'answered', 'reads the stream it consumes')
})
