import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect, headers, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node'
import t from 'tap'
import { inboxPrefixOf, readSeedFile, seedFileInboxPrefix } from '../../src/platform/nats-credentials.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'
import {
  pollUntil,
  singleNodeEnv,
  startSingleNode,
  stopWith,
  superadminToken,
  tempDataDir,
  type SingleNode,
} from './single-node.ts'

/*
 * The single-node nats-server takes no anonymous client (the hole: a local script read AUTH_CACHE,
 * called rpc.users.list with a forged caller header and created an admin role). Each platform user
 * gets its own generated NKey seed (0600, reused on restart); `events` and `gateway` are held to
 * what they need; an edge gateway (ROLES=gateway) with the `gateway` credentials still serves
 * requests, files, webhooks and a streamed chat turn. Also: a clean first start logs no warning.
 */
// three starts of the platform's process (a single node, an edge gateway, a restart) and a chat turn
t.setTimeout(480_000)
const dataDir = tempDataDir(t)
const natsDir = join(dataDir, 'nats')
const seedOf = (user: string) => readSeedFile(join(natsDir, `${user}.nk`))
const natsUrl = () => (JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')) as { natsUrl: string }).natsUrl
// each user's own reply subjects (`_INBOX_gateway`, `_INBOX_events`), as its seed file says
const as = (user: 'platform' | 'gateway' | 'events'): Promise<NatsConnection> =>
  connect({
    servers: natsUrl(),
    authenticator: nkeyAuthenticator(seedOf(user)),
    inboxPrefix: inboxPrefixOf(user),
    maxReconnectAttempts: 0,
  })

/** The error a request ends with (a permission violation on its subject), or 'answered'. */
async function requestOutcome(
  nc: NatsConnection,
  subject: string,
  data = '',
  hdrs?: Record<string, string>,
): Promise<string> {
  const h = headers()
  for (const [k, v] of Object.entries(hdrs ?? {})) h.set(k, v)
  return nc.request(subject, data, { timeout: 5_000, headers: h }).then(
    () => 'answered',
    (err: unknown) => String(err),
  )
}

/** How a subscription ends: the server refuses a subject the user may not subscribe to. */
async function subscribeOutcome(nc: NatsConnection, subject: string): Promise<string> {
  const sub = nc.subscribe(subject)
  return sub.closed.then(
    (err) => (err === undefined ? 'closed' : String(err)),
    (err: unknown) => String(err),
  )
}

let node: SingleNode

t.before(async () => {
  // debug: the actor host logs each state-key listing, which the warning test below waits for
  node = await startSingleNode(singleNodeEnv(dataDir, { LOG_LEVEL: 'debug' }))
})
t.teardown(async () => {
  await stopWith(node.child, 'SIGINT')
})

t.test('a clean first start logs no warning', async (t) => {
  const types = ['chat', 'schedule', 'db-trigger', 'pool']
  const listedAt = await pollUntil('the actor host to list the state keys of every actor type', async () => {
    const lines = node
      .output()
      .split('\n')
      .filter((l) => l.includes('actor state keys listed'))
    const times = types.map(
      (type) => lines.map((l) => JSON.parse(l) as { type: string; time: number }).find((l) => l.type === type)?.time,
    )
    return times.every((x) => x !== undefined) ? Math.max(...(times as number[])) : undefined
  })
  // The warning was a 3 s timer's, armed with each listing: its absence shows only after that
  // deadline, so this waits for it (on the clock of the listing, not a guess).
  await pollUntil(
    'the listings timeout to pass',
    async () => (Date.now() > listedAt + 3_500 ? true : undefined),
    20_000,
    100,
  )
  const warnings = node
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; mod?: string })
    .filter((l) => l.level >= 40)
    // the one warning that asks something of the user: set SMTP_HOST, or read login codes from the log
    .filter((l) => !(l.mod === 'mail' && /SMTP_HOST is not set/.test(l.msg)))
  t.same(warnings, [], 'no warning')
})

t.test('credentials: one seed per user, 0600 in a 0700 directory; nats.conf holds public keys only', async (t) => {
  t.equal(statSync(natsDir).mode & 0o777, 0o700, 'DATA_DIR/nats is 0700')
  for (const user of ['platform', 'gateway', 'events']) {
    t.equal(statSync(join(natsDir, `${user}.nk`)).mode & 0o777, 0o600, `${user}.nk is 0600`)
    t.match(new TextDecoder().decode(seedOf(user)), /^SU[A-Z2-7]+$/)
    t.equal(seedFileInboxPrefix(join(natsDir, `${user}.nk`)), user === 'platform' ? '_INBOX' : `_INBOX_${user}`)
  }
  const conf = readFileSync(join(natsDir, 'nats.conf'), 'utf8')
  t.equal(statSync(join(natsDir, 'nats.conf')).mode & 0o777, 0o600)
  t.match(conf, /authorization \{/)
  t.notMatch(conf, /no_auth_user/, 'no user for anonymous clients')
  t.notMatch(conf, /"SU/, 'no seed in nats.conf')
})

t.test('an anonymous connection is refused', async (t) => {
  const err = await connect({ servers: natsUrl(), maxReconnectAttempts: 0 }).then(
    async (nc) => {
      await nc.close()
      return 'connected'
    },
    (e: unknown) => String(e),
  )
  t.match(err, /Authorization Violation/i)
  // a seed the server does not know is refused the same way
  const { nkeys } = await import('@nats-io/transport-node')
  const stranger = await connect({
    servers: natsUrl(),
    authenticator: nkeyAuthenticator(nkeys.createUser().getSeed()),
    maxReconnectAttempts: 0,
  }).then(
    async (nc) => {
      await nc.close()
      return 'connected'
    },
    (e: unknown) => String(e),
  )
  t.match(stranger, /Authorization Violation/i)
})

t.test('events: may read the execution events, not call the API nor read AUTH_CACHE', async (t) => {
  const nc = await as('events')
  t.teardown(() => nc.close())
  // the forged request of the report: rpc.users.list naming the admin as caller
  t.match(
    await requestOutcome(nc, 'rpc.users.list', '{}', { 'X-Caller': 'admin' }),
    /Permissions Violation for Publish to "rpc\.users\.list"/,
  )
  t.match(await requestOutcome(nc, 'rpc.roles.create', '{}'), /Permissions Violation/)
  t.match(await requestOutcome(nc, '$JS.API.STREAM.INFO.KV_AUTH_CACHE'), /Permissions Violation/)
  t.match(await requestOutcome(nc, '$JS.API.DIRECT.GET.KV_AUTH_CACHE.$KV.AUTH_CACHE.x'), /Permissions Violation/)
  t.match(await subscribeOutcome(nc, '$KV.AUTH_CACHE.>'), /Permissions Violation for Subscription/)
  t.match(
    await subscribeOutcome(nc, 'rpc.>'),
    /Permissions Violation for Subscription/,
    'cannot answer API requests either',
  )
  t.match(
    await subscribeOutcome(nc, '_INBOX.>'),
    /Permissions Violation for Subscription/,
    "cannot read the replies to others' requests",
  )
  // what it is for: the EVENTS stream and its live subjects
  const jsm = await jetstreamManager(nc)
  t.equal((await jsm.streams.info('EVENTS')).config.name, 'EVENTS')
  // durably: its own consumer on EVENTS, pulled (nothing ran yet: no message) and removed
  await jsm.consumers.add('EVENTS', { durable_name: 'backend', ack_policy: AckPolicy.Explicit })
  t.equal(
    await jetstream(nc)
      .consumers.get('EVENTS', 'backend')
      .then((c) => c.next({ expires: 1_000 })),
    null,
    'pulls from its consumer',
  )
  t.ok(await jsm.consumers.delete('EVENTS', 'backend'))
  const live = nc.subscribe('events.execution.>')
  await nc.flush()
  t.notOk(live.isClosed(), 'subscribes to events.execution.>')
  live.unsubscribe()
})

t.test('gateway: forwards requests, cannot read AUTH_CACHE, answer requests or create streams', async (t) => {
  const nc = await as('gateway')
  t.teardown(() => nc.close())
  t.match(await requestOutcome(nc, '$JS.API.STREAM.INFO.KV_AUTH_CACHE'), /Permissions Violation/)
  t.match(await subscribeOutcome(nc, '$KV.AUTH_CACHE.>'), /Permissions Violation for Subscription/)
  t.match(
    await subscribeOutcome(nc, 'rpc.>'),
    /Permissions Violation for Subscription/,
    'only the internal roles answer requests',
  )
  t.match(
    await subscribeOutcome(nc, '_INBOX.>'),
    /Permissions Violation for Subscription/,
    "cannot read the replies to others' requests",
  )
  t.match(await subscribeOutcome(nc, '_INBOX_events.>'), /Permissions Violation for Subscription/)
  t.match(
    await requestOutcome(nc, '$JS.API.STREAM.CREATE.EVIL', JSON.stringify({ name: 'EVIL', subjects: ['evil.>'] })),
    /Permissions Violation/,
  )
  t.match(await requestOutcome(nc, '$JS.API.STREAM.DELETE.JOBS'), /Permissions Violation/)
  t.match(await requestOutcome(nc, 'jobs.fn.x', '{}'), /Permissions Violation/, 'no job enqueued behind the API')
  // the request subjects are its own: the service answers (an unauthenticated call, refused by the service)
  t.equal(await requestOutcome(nc, 'rpc.users.list', '{}'), 'answered')
})

t.test('platform: every subject (the internal roles)', async (t) => {
  const nc = await as('platform')
  t.teardown(() => nc.close())
  t.equal(await requestOutcome(nc, '$JS.API.STREAM.INFO.KV_AUTH_CACHE'), 'answered')
})

t.test('an edge gateway with the gateway credentials serves the API', async (t) => {
  const t0 = performance.now()
  const edge = await startSingleNode(
    singleNodeEnv(dataDir, {
      ROLES: 'gateway',
      NATS_URL: natsUrl(),
      NATS_NKEY_FILE: join(natsDir, 'gateway.nk'),
      LOG_LEVEL: 'warn',
    }),
  )
  t.teardown(() => stopWith(edge.child, 'SIGINT'))
  const token = superadminToken(singleNodeEnv(dataDir))
  const call = async (method: string, path: string, body?: unknown, type = 'application/json') => {
    const res = await fetch(`${edge.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': type },
      ...(body === undefined
        ? {}
        : { body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body) }),
    })
    return { status: res.status, text: await res.text() }
  }
  t.comment(`edge gateway up after ${String(Math.round(performance.now() - t0))} ms`)
  const health = await pollUntil('the edge gateway healthy', async () =>
    (await fetch(`${edge.base}/health`)).status === 200 ? true : undefined,
  )
  t.ok(health)
  t.equal(
    (await call('POST', '/api/v1/skills', { namespace: 'edge', name: 'style', description: 'd', content: '# x' }))
      .status,
    201,
  )
  t.equal((await call('GET', '/api/v1/skills/edge/style')).status, 200)
  // its copy of the WEBHOOKS bucket answers an unknown path
  t.equal((await fetch(`${edge.base}/webhooks/none/here`, { method: 'POST', body: '{}' })).status, 404)
  // a streamed chat turn: the gateway relays the SSE channel the worker publishes
  const llm = await startFakeLlm()
  t.teardown(() => llm.close())
  t.equal(
    (
      await call('POST', '/api/v1/llm-providers', {
        name: 'fake',
        provider_type: 'openai',
        api_endpoint: llm.endpoint('openai'),
        api_key: 'k',
        default_model: 'm',
        is_default: true,
      })
    ).status,
    201,
  )
  t.equal(
    (await call('POST', '/api/v1/agents', { namespace: 'edge', name: 'talker', system_prompt: 'Talk.' })).status,
    201,
  )
  const chat = JSON.parse((await call('POST', '/agents/edge/talker/chats', {})).text) as { id: string }
  llm.push({ text: ['Hello', ' edge', '.'] })
  t.comment(`chat created after ${String(Math.round(performance.now() - t0))} ms`)
  const turn = await call('POST', `/chats/${chat.id}/messages/stream`, { content: 'hi' })
  t.comment(`turn streamed after ${String(Math.round(performance.now() - t0))} ms`)
  t.equal(turn.status, 200)
  t.match(turn.text, /event: done/)
  t.equal([...turn.text.matchAll(/"content":"([^"]*)"/g)].map((m) => m[1]).join(''), 'Hello edge.')
  // files stream through the gateway into the FILES object store and back
  t.equal((await call('POST', '/api/v1/collections', { namespace: 'edge', name: 'docs' })).status, 201)
  const bytes = new Uint8Array(1_500_000).map((_, i) => i % 251)
  t.equal((await call('POST', '/files/edge/docs?name=b.bin', bytes, 'application/octet-stream')).status, 201)
  const down = await fetch(`${edge.base}/files/edge/docs/b.bin`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(down.status, 200)
  // compared as buffers: a deep comparison of 1.5 million elements takes tap a minute
  t.ok(Buffer.from(await down.arrayBuffer()).equals(bytes), 'the download is the upload')
  t.comment(`file up and down after ${String(Math.round(performance.now() - t0))} ms`)
  t.notMatch(edge.output(), /Permissions Violation/, 'the gateway credentials cover what the gateway does')
})

t.test('a restart on the same data directory reuses the credentials', async (t) => {
  const before = ['platform', 'gateway', 'events'].map((u) => readFileSync(join(natsDir, `${u}.nk`), 'utf8'))
  const conf = readFileSync(join(natsDir, 'nats.conf'), 'utf8')
  t.equal(await stopWith(node.child, 'SIGINT'), 0)
  node = await startSingleNode(singleNodeEnv(dataDir))
  t.same(
    ['platform', 'gateway', 'events'].map((u) => readFileSync(join(natsDir, `${u}.nk`), 'utf8')),
    before,
    'same seeds',
  )
  t.equal(readFileSync(join(natsDir, 'nats.conf'), 'utf8'), conf, 'same nats.conf')
  const nc = await as('events')
  t.ok(nc.info?.server_id, 'the events seed still connects')
  await nc.close()
  t.match(
    await connect({ servers: natsUrl(), maxReconnectAttempts: 0 }).then(
      () => 'connected',
      (e: unknown) => String(e),
    ),
    /Authorization Violation/i,
    'still no anonymous client',
  )
  t.equal((await fetch(`${node.base}/health`)).status, 200)
})
