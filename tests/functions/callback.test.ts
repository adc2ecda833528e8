import { randomUUID } from 'node:crypto'
import { decodeJwt } from 'jose'
import t from 'tap'
import { createTokenVerifier } from '../../gateway/auth.ts'
import { callbackBody, deliverCallback, validateCallbackUrl, type CallbackDeps } from '../../src/functions/callback.ts'
import { enqueueJob } from '../../src/jobs/enqueue.ts'
import type { JobState } from '../../src/jobs/job-state.ts'
import { upsertExecution } from '../../src/jobs/mirror.ts'
import { startJobWorkers } from '../../src/jobs/start.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import type { ResolvedAddress } from '../../src/platform/outbound-http.ts'
import { eventually } from '../helpers/eventually.ts'
import { SECRET_KEY, startTestPlatform } from '../helpers/env.ts'
import { prepareLocalTls, startReceiver, type Received } from '../helpers/local-https.ts'
import { testExecutor, type TestInput } from '../jobs/test-executors.ts'

/*
 * Execution callbacks: the URL checks of the async execute endpoint, and
 * real deliveries over HTTPS to a receiver on a documentation address (198.51.100.7 on `lo`, a
 * self-signed certificate trusted through OUTBOUND_EXTRA_CA_FILE): through the job system (enqueue
 * with a callback URL → worker → mirror → one POST), and directly for the outcomes (500, no answer,
 * a name that now resolves to loopback, an inactive user).
 */
const ADDRESS = '198.51.100.7'
const tls = prepareLocalTls(t, ADDRESS, ['callback.test'])
const env = await startTestPlatform(t, {
  // No platform workers: the test's own worker runs the jobs with the test executor.
  ROLES: 'gateway,resources',
  CALLBACK_URL_HOSTS: `${ADDRESS}, callback.test, hooks.nowhere.invalid`,
  OUTBOUND_EXTRA_CA_FILE: tls.certFile,
  QUEUE_MAX_RETRIES: '0',
})
const { platform, config } = env
const jobs = platform.jobs
const db = platform.db
if (jobs === undefined || db === undefined) throw new Error('job service missing')
const names = natsNames(config.NATS_PREFIX)
const log = createLogger({ level: 'silent' })
const alice = await env.createUser('alice@test.local')

const fixedDns =
  (entries: Record<string, string>) =>
  async (host: string): Promise<ResolvedAddress[]> => {
    const address = entries[host]
    if (address === undefined) throw new Error(`ENOTFOUND ${host}`)
    return [{ address, family: address.includes(':') ? 6 : 4 }]
  }

t.test('validateCallbackUrl', async (t) => {
  const on = { CALLBACK_URL_HOSTS: 'hooks.example.com, callback.test' }
  const dns = {
    lookup: fixedDns({
      'hooks.example.com': '203.0.113.10',
      'callback.test': ADDRESS,
      'internal.example.com': '10.0.0.7',
      'meta.example.com': '169.254.169.254',
      'v6.example.com': '::1',
      'mapped.example.com': '::ffff:127.0.0.1',
    }),
  }
  const refuse = (url: string, cfg: { CALLBACK_URL_HOSTS: string }, code: string) =>
    t.rejects(
      validateCallbackUrl(url, cfg, dns),
      { status: 400, code },
      `${url} with "${cfg.CALLBACK_URL_HOSTS}" → ${code}`,
    )

  await refuse('https://hooks.example.com/x', { CALLBACK_URL_HOSTS: '' }, 'callback.disabled')
  await refuse('https://hooks.example.com/x', { CALLBACK_URL_HOSTS: ' , ' }, 'callback.disabled')
  await refuse('http://hooks.example.com/x', on, 'callback.not_https')
  await refuse('http://hooks.example.com/x', { CALLBACK_URL_HOSTS: '*' }, 'callback.not_https')
  await refuse('https://evil.example.net/x', on, 'callback.host_not_allowed')
  await refuse('https://hooks.example.com.evil.example.net/x', on, 'callback.host_not_allowed')
  await refuse('not a url', on, 'callback.invalid_url')
  for (const host of ['internal.example.com', 'meta.example.com', 'v6.example.com', 'mapped.example.com'])
    await refuse(`https://${host}/x`, { CALLBACK_URL_HOSTS: '*' }, 'callback.private_address')
  for (const url of [
    'https://127.0.0.1/',
    'https://10.1.2.3/',
    'https://169.254.169.254/',
    'https://[::1]/',
    'https://[::ffff:127.0.0.1]/',
  ]) {
    await refuse(url, { CALLBACK_URL_HOSTS: '*' }, 'callback.private_address')
  }
  await t.rejects(
    validateCallbackUrl('https://localhost/x', { CALLBACK_URL_HOSTS: '*' }),
    { status: 400, code: 'callback.private_address' },
    'localhost through the system resolver',
  )
  await refuse(
    'https://internal.example.com/x',
    { CALLBACK_URL_HOSTS: 'internal.example.com' },
    'callback.private_address',
  )

  await validateCallbackUrl('https://hooks.example.com/x?y=1', on, dns)
  await validateCallbackUrl('https://HOOKS.example.com:8443/x', on, dns)
  await validateCallbackUrl(
    'https://anything.example.org/x',
    { CALLBACK_URL_HOSTS: '*' },
    { lookup: fixedDns({ 'anything.example.org': '203.0.113.11' }) },
  )
  await validateCallbackUrl(`https://${ADDRESS}/x`, { CALLBACK_URL_HOSTS: ADDRESS })
  t.pass('allowed URLs pass')
})

t.test(
  "a callback URL whose host does not resolve: 502 upstream.dns_failed naming the host, not the database's 503",
  async (t) => {
    await t.rejects(
      validateCallbackUrl('https://hooks.nowhere.invalid/cb', { CALLBACK_URL_HOSTS: '*' }),
      { status: 502, code: 'upstream.dns_failed', message: /hooks\.nowhere\.invalid/ },
      'through the system resolver',
    )
    const fn = await env.request('POST', '/api/v1/functions', {
      token: alice.token,
      body: { namespace: 'alice', name: 'cb-dns', code: 'def handler(input, context):\n    return input\n' },
    })
    t.equal(fn.status, 201, fn.text)
    const res = await env.request('POST', '/functions/alice/cb-dns/execute/async', {
      token: alice.token,
      body: { input: null, callback_url: 'https://hooks.nowhere.invalid/cb' },
    })
    t.match(res, { status: 502, body: { code: 'upstream.dns_failed' } }, res.text)
    t.match((res.body as { detail: string }).detail, /hooks\.nowhere\.invalid/, 'the answer names the host')
  },
)

t.test('the callback body', async (t) => {
  const row = {
    id: 'e1',
    namespace: 'ns',
    name: 'fn',
    trigger_id: 'runtime-api',
    user_id: null,
    callback_url: 'https://x/',
    output_data: { a: 1 },
    error: null,
    created_at: '2030-01-01T00:00:00.000Z',
    started_at: '2030-01-01T00:00:01.000Z',
    finished_at: '2030-01-01T00:00:03.250Z',
  }
  t.same(callbackBody({ ...row, status: 'completed' }), {
    execution_id: 'e1',
    trigger_id: 'runtime-api',
    function: { namespace: 'ns', name: 'fn' },
    status: 'success',
    started_at: '2030-01-01T00:00:01.000Z',
    finished_at: '2030-01-01T00:00:03.250Z',
    duration_ms: 2250,
    result: { a: 1 },
    error: null,
  })
  const failed = callbackBody({ ...row, status: 'failed', output_data: null, error: 'boom' })
  t.same(failed, {
    execution_id: 'e1',
    trigger_id: 'runtime-api',
    function: { namespace: 'ns', name: 'fn' },
    status: 'failure',
    started_at: row.started_at,
    finished_at: row.finished_at,
    duration_ms: 2250,
    error: 'boom',
  })
  t.notOk('result' in failed, 'no result on failure')
  const cancelledEarly = callbackBody({
    ...row,
    status: 'cancelled',
    started_at: null,
    output_data: null,
    error: 'cancelled',
  })
  t.match(cancelledEarly, { status: 'failure', error: 'cancelled', started_at: row.finished_at, duration_ms: 0 })
})

t.test('deliveries to a real HTTPS receiver', { skip: tls.skip }, async (t) => {
  const receiver = await startReceiver(t, tls, (_r, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"ok":true}')
  })
  const url = (path: string) => `https://${ADDRESS}:${String(receiver.port)}${path}`
  const named = (path: string) => `https://callback.test:${String(receiver.port)}${path}`
  const verifier = createTokenVerifier(SECRET_KEY)
  const posts = (path: string): Received[] => receiver.received.filter((r) => r.url === path)
  const row = async (id: string) =>
    (
      await env.sql<{ callback_status: string | null; callback_response_code: number | null }>(
        'select callback_status, callback_response_code from executions where id = $1',
        [id],
      )
    )[0]
  const settledRow = (id: string) =>
    eventually(async () => {
      const r = await row(id)
      return r !== undefined && (r.callback_status === 'sent' || r.callback_status === 'failed') ? r : undefined
    }, `the callback outcome of ${id}`)

  const workers = await startJobWorkers({
    nc: platform.nc,
    names,
    config,
    log,
    executors: { fn: testExecutor() },
    replicas: 1,
  })
  t.teardown(() => workers.stop())
  const enqueue = (input: TestInput, callbackPath: string, pool: 'fn' | 'subagent' = 'fn') =>
    enqueueJob(jobs.enqueue, {
      pool,
      kind: 'function',
      namespace: 'tests',
      name: 'hooked',
      input,
      userId: alice.id,
      triggerId: 'trig-1',
      callbackUrl: url(callbackPath),
    })

  t.test(
    'through the job system: one POST with the callback body and a fresh token of the user; outcome recorded',
    async (t) => {
      const job = await enqueue({ op: 'echo', value: { hello: 'world' } }, '/done')
      const [post] = await eventually(
        async () => (posts('/done').length > 0 ? posts('/done') : undefined),
        'the callback POST',
      )
      if (post === undefined) throw new Error('unreachable')
      t.equal(post.method, 'POST')
      t.equal(post.headers['content-type'], 'application/json')
      const body = JSON.parse(post.body) as Record<string, unknown>
      t.match(body, {
        execution_id: job.id,
        trigger_id: 'trig-1',
        function: { namespace: 'tests', name: 'hooked' },
        status: 'success',
        result: { value: { hello: 'world' }, attempt: 1 },
        error: null,
      })
      t.ok(Number.isInteger(body['duration_ms']) && (body['duration_ms'] as number) >= 0, 'duration_ms is an integer')
      t.equal(new Date(body['started_at'] as string).toISOString(), body['started_at'], 'started_at ISO 8601')
      t.equal(new Date(body['finished_at'] as string).toISOString(), body['finished_at'], 'finished_at ISO 8601')
      const auth = post.headers.authorization ?? ''
      const caller = await verifier.verify(auth)
      t.same(
        caller,
        { sub: alice.id, via: 'jwt' },
        'a valid access token signed with SECRET_KEY, for the originating user',
      )
      const claims = decodeJwt(auth.slice(7))
      t.equal(claims['email'], 'alice@test.local')
      t.ok((claims.exp ?? 0) * 1000 > Date.now(), 'unexpired')
      t.same(await settledRow(job.id), { callback_status: 'sent', callback_response_code: 200 })
      const exe = await env.request('GET', `/executions/${job.id}`, { token: alice.token })
      t.match(exe.body, { callback_status: 'sent', callback_response_code: 200 })

      // At-least-once mirror, at-most-once callback: a second delivery finds the claim taken.
      t.equal(await deliverCallback({ db: db, config, log }, { id: job.id }), 'not-claimed')
      await new Promise((r) => setTimeout(r, 300))
      t.equal(posts('/done').length, 1, 'exactly one POST')
    },
  )

  t.test('a failed execution reports failure with its error', async (t) => {
    const job = await enqueue({ op: 'fail' }, '/failed')
    const [post] = await eventually(
      async () => (posts('/failed').length > 0 ? posts('/failed') : undefined),
      'the callback POST',
    )
    const body = JSON.parse(post?.body ?? '{}') as Record<string, unknown>
    t.match(body, { execution_id: job.id, status: 'failure', error: 'poisoned input' })
    t.notOk('result' in body)
    t.same(await settledRow(job.id), { callback_status: 'sent', callback_response_code: 200 })
  })

  t.test('a cancelled execution also terminates: it reports failure, error "cancelled"', async (t) => {
    // No subagent worker runs here: the job waits until it is cancelled.
    const job = await enqueue({ op: 'echo' }, '/cancelled', 'subagent')
    t.equal((await env.request('POST', `/api/v1/queue/jobs/${job.id}/cancel`, { token: env.adminToken })).status, 200)
    const [post] = await eventually(
      async () => (posts('/cancelled').length > 0 ? posts('/cancelled') : undefined),
      'the callback POST',
    )
    t.match(JSON.parse(post?.body ?? '{}'), {
      execution_id: job.id,
      status: 'failure',
      error: 'cancelled',
      duration_ms: 0,
    })
    t.same(await settledRow(job.id), { callback_status: 'sent', callback_response_code: 200 })
  })

  // Direct deliveries of rows written like the mirror writes them.
  const ended = async (path: string, extra: Partial<JobState> = {}): Promise<string> => {
    const now = new Date().toISOString()
    const s: JobState = {
      id: randomUUID(),
      pool: 'fn',
      kind: 'function',
      namespace: 'tests',
      name: 'direct',
      status: 'completed',
      attempts: 1,
      user_id: alice.id,
      trigger_type: 'api',
      trigger_id: 'runtime-api',
      chat_id: null,
      parent_id: null,
      depth: 0,
      input: {},
      worker: 'w',
      result: { r: 1 },
      error: null,
      retry_of: null,
      callback_url: named(path),
      created_at: now,
      started_at: now,
      finished_at: now,
      ...extra,
    }
    await upsertExecution(db, s, 1, s.result ?? null)
    return s.id
  }
  const direct = (over: Partial<CallbackDeps> = {}): CallbackDeps => ({
    db: db,
    config,
    log,
    lookup: fixedDns({ 'callback.test': ADDRESS }),
    ...over,
  })

  t.test('a receiver answering 500: failed, 500', async (t) => {
    receiver.handler = (_r, res) => {
      res.writeHead(500)
      res.end('nope')
    }
    const id = await ended('/500')
    t.same(await deliverCallback(direct(), { id }), { status: 'failed', code: 500 })
    t.same(await row(id), { callback_status: 'failed', callback_response_code: 500 })
    t.equal(posts('/500').length, 1, 'one attempt, no retry')
    t.match(JSON.parse(posts('/500')[0]?.body ?? '{}'), { execution_id: id, status: 'success', result: { r: 1 } })
  })

  t.test('a receiver that never answers: failed, no code, after the timeout', async (t) => {
    receiver.handler = () => undefined
    const id = await ended('/hang')
    const started = Date.now()
    t.same(await deliverCallback(direct({ timeoutMs: 1000 }), { id }), { status: 'failed', code: null })
    const took = Date.now() - started
    t.ok(took >= 950 && took < 5000, `gave up after the timeout (${String(took)} ms)`)
    t.same(await row(id), { callback_status: 'failed', callback_response_code: null })
    t.equal(posts('/hang').length, 1)
  })

  t.test('the URL is checked again at delivery: a name now resolving to loopback gets nothing', async (t) => {
    receiver.handler = (_r, res) => res.end('ok')
    const id = await ended('/rebound')
    t.same(await deliverCallback(direct({ lookup: fixedDns({ 'callback.test': '127.0.0.1' }) }), { id }), {
      status: 'failed',
      code: null,
    })
    t.equal(posts('/rebound').length, 0)
    const off = await ended('/disabled')
    t.same(
      await deliverCallback(direct({ config: { ...config, CALLBACK_URL_HOSTS: '' } }), { id: off }),
      { status: 'failed', code: null },
      'callbacks disabled since',
    )
    t.equal(posts('/disabled').length, 0)
  })

  t.test('no active originating user: no token is issued, nothing is sent', async (t) => {
    const bob = await env.createUser('bob@test.local')
    await env.sql('update users set is_active = false where id = $1', [bob.id])
    const id = await ended('/inactive', { user_id: bob.id })
    t.same(await deliverCallback(direct(), { id }), { status: 'failed', code: null })
    t.equal(posts('/inactive').length, 0)
  })

  t.test('rows without callback_url or not ended are not claimed', async (t) => {
    const running = await ended('/running', { status: 'running', finished_at: null })
    t.equal(await deliverCallback(direct(), { id: running }), 'not-claimed')
    const none = await ended('/none', { callback_url: null })
    t.equal(await deliverCallback(direct(), { id: none }), 'not-claimed')
    t.same(await row(running), { callback_status: null, callback_response_code: null })
  })
})
