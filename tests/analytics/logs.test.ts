import t from 'tap'
import { analyticsHealth } from '../../src/analytics/health.ts'
import { clickHouseHttp } from '../../src/analytics/clickhouse-http.ts'
import { chDateTime } from '../../src/analytics/consumers.ts'
import { sweepPartitions } from '../../src/analytics/tables.ts'
import { startClickHouse, type ClickHouse } from '../helpers/clickhouse.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Request and execution logs against a real ClickHouse (Debian's clickhouse-server 18.16, started
 * by tests/helpers/clickhouse.ts): requests made through the platform are found by every filter
 * of `GET /api/v1/request-logs`, pages, bad ranges and unknown fields are 422, an API key's
 * owner is named, a function run shows in `GET /api/v1/execution-logs`, the retention sweep
 * (this server has no table TTL) drops a day partition 100 days old, and with ClickHouse killed
 * requests still answer at once while the writer's dropped counter rises.
 */
const ch: ClickHouse = await startClickHouse(t)
const skip = ch.skip
const database = `logs_${String(process.pid)}`
let env: TestPlatform
let user: { id: string; token: string }
const started = new Date(Date.now() - 1000).toISOString()

interface Entry {
  time: string
  method: string
  route: string
  status: number
  duration_ms: number
  user_id: string
  namespace: string
  bytes_in: number
  bytes_out: number
  client_ip: string
  request_id: string
  trace_id: string
}
interface LogPage<E = Entry> {
  items: E[]
  total: number
}

const logs = async (query: string): Promise<LogPage> => {
  const r = await env.request('GET', `/api/v1/request-logs?${query}`)
  if (r.status !== 200) throw new Error(`request-logs ${query}: ${String(r.status)} ${r.text}`)
  return r.body as LogPage
}

/** Waits until the log holds the request with this id (two 1 s batches away at most). */
const logged = (requestId: string, query = ''): Promise<Entry> =>
  eventually(
    async () => (await logs(`limit=1000&${query}`)).items.find((e) => e.request_id === requestId),
    `request ${requestId} logged`,
  )

t.before(async () => {
  if (skip !== false) return
  env = await startTestPlatform(t, {
    ANALYTICS_HOST: ch.host,
    ANALYTICS_PORT: String(ch.port),
    ANALYTICS_USER: ch.user,
    ANALYTICS_PASSWORD: ch.password,
    ANALYTICS_DATABASE: database,
    ANALYTICS_BUFFER_RECORDS: '100',
  })
  user = await env.createUser('logs-user@test.local')
})

t.test(
  'every request is logged with its route template, user, namespace, sizes, address and trace',
  { skip },
  async (t) => {
    const trace = '4bf92f3577b34da6a3ce929d0e0e4736'
    const one = await env.request('GET', '/api/v1/agents/default/default', {
      headers: { 'x-request-id': 'logs-agent-read', traceparent: `00-${trace}-00f067aa0ba902b7-01` },
    })
    t.equal(one.status, 200)
    const mine = await env.request('GET', '/api/v1/agents/default/nope', {
      token: user.token,
      headers: { 'x-request-id': 'logs-user-404' },
    })
    t.equal(mine.status, 404)
    const anon = await env.request('GET', '/api/v1/agents', { token: null, headers: { 'x-request-id': 'logs-anon' } })
    t.equal(anon.status, 401)
    const posted = await env.request('POST', '/api/v1/skills', {
      body: { namespace: 'team', name: 'style', content: 'Write plainly.' },
      headers: { 'x-request-id': 'logs-post' },
    })

    const e = await logged('logs-agent-read')
    t.match(e, {
      method: 'GET',
      route: '/api/v1/agents/{namespace}/{name}',
      status: 200,
      user_id: env.adminId,
      namespace: 'default',
      client_ip: '127.0.0.1',
      trace_id: trace,
      bytes_in: 0,
    })
    t.equal(e.bytes_out, Buffer.byteLength(one.text), 'bytes out: the body sent')
    t.ok(e.duration_ms >= 0 && Date.parse(e.time) >= Date.parse(started), 'a duration and a time')
    t.match(await logged('logs-user-404'), { user_id: user.id, status: 404, trace_id: '' })
    t.match(await logged('logs-anon'), { user_id: '', status: 401, route: '/api/v1/agents' })
    t.match(await logged('logs-post'), {
      method: 'POST',
      route: '/api/v1/skills',
      status: posted.status,
      bytes_in: Buffer.byteLength(JSON.stringify({ namespace: 'team', name: 'style', content: 'Write plainly.' })),
    })
  },
)

t.test('each filter finds its requests', { skip }, async (t) => {
  await logged('logs-user-404')
  const byUser = await logs(`user_id=${user.id}`)
  t.ok(byUser.items.length >= 1 && byUser.items.every((e) => e.user_id === user.id), 'user_id')
  const byRoute = await logs(`route=${encodeURIComponent('/api/v1/agents/{namespace}/{name}')}`)
  t.ok(
    byRoute.items.some((e) => e.request_id === 'logs-agent-read') &&
      byRoute.items.every((e) => e.route === '/api/v1/agents/{namespace}/{name}'),
    'route',
  )
  const client = await logs('status_class=4xx&limit=1000')
  t.ok(
    client.items.some((e) => e.request_id === 'logs-anon') &&
      client.items.every((e) => e.status >= 400 && e.status < 500),
    'status_class',
  )
  t.notOk(
    (await logs('status_class=2xx&limit=1000')).items.some((e) => e.request_id === 'logs-anon'),
    'another class leaves it out',
  )
  const all = await logs('limit=1000')
  const slowest = Math.max(...all.items.map((e) => e.duration_ms))
  const slow = await logs(`min_duration_ms=${String(slowest)}&limit=1000`)
  t.ok(slow.items.length >= 1 && slow.items.every((e) => e.duration_ms >= slowest), 'min_duration_ms')
  const future = new Date(Date.now() + 3_600_000).toISOString()
  t.same(await logs(`from=${encodeURIComponent(future)}`), { items: [], total: 0 }, 'from in the future: nothing')
  const before = await logs(`to=${encodeURIComponent(started)}`)
  t.equal(before.total, 0, 'to before the first request: nothing')
  const window = await logs(`from=${encodeURIComponent(started)}&to=${encodeURIComponent(future)}&limit=1000`)
  t.ok(
    window.items.some((e) => e.request_id === 'logs-agent-read'),
    'from and to around it',
  )
})

t.test('pages: newest first, limit and offset, with the total', { skip }, async (t) => {
  for (let i = 0; i < 5; i++)
    await env.request('GET', '/api/v1/agents', { headers: { 'x-request-id': `logs-page-${String(i)}` } })
  await logged('logs-page-4')
  const q = `route=${encodeURIComponent('/api/v1/agents')}&status_class=2xx`
  const whole = await logs(`${q}&limit=1000`)
  t.ok(whole.total >= 5)
  const times = whole.items.map((e) => Date.parse(e.time))
  t.same(
    times,
    [...times].sort((a, b) => b - a),
    'newest first',
  )
  const first = await logs(`${q}&limit=2`)
  const second = await logs(`${q}&limit=2&offset=2`)
  t.equal(first.items.length, 2)
  t.equal(first.total, whole.total, 'the total of every match, not of the page')
  t.same(
    [...first.items, ...second.items].map((e) => e.request_id),
    whole.items.slice(0, 4).map((e) => e.request_id),
    'offset continues where the page ended',
  )
})

t.test('bad ranges, unknown fields and non-admins are refused', { skip }, async (t) => {
  const now = Date.now()
  const from = new Date(now).toISOString()
  const to = new Date(now - 60_000).toISOString()
  for (const path of ['/api/v1/request-logs', '/api/v1/execution-logs']) {
    const range = await env.request('GET', `${path}?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`)
    t.equal(range.status, 422, `${path}: from after to`)
    t.match(range.body, { code: 'request.invalid' })
    const unknown = await env.request('GET', `${path}?limit=5&statuss=500`)
    t.equal(unknown.status, 422, `${path}: an unknown field`)
    t.match(unknown.text, /statuss/)
    t.equal((await env.request('GET', `${path}?limit=1001`)).status, 422, `${path}: limit over 1000`)
    t.equal((await env.request('GET', `${path}?from=yesterday`)).status, 422, `${path}: from not a time`)
    t.equal((await env.request('GET', path, { token: user.token })).status, 403, `${path}: not for users`)
  }
  t.equal((await env.request('GET', '/api/v1/request-logs?status_class=6xx')).status, 422)
  t.equal((await env.request('GET', '/api/v1/request-logs?user_id=not-a-uuid')).status, 422)
})

t.test("an API key's requests are logged under its owner", { skip }, async (t) => {
  const made = await env.request('POST', '/api/v1/api-keys', {
    body: { name: 'logs', permissions: { 'platform.agents/*/*.read:all': true } },
  })
  t.equal(made.status, 201, made.text)
  const key = (made.body as { key: string }).key
  const res = await env.request('GET', '/api/v1/agents/default/default', {
    token: null,
    headers: { 'x-api-key': key, 'x-request-id': 'logs-api-key' },
  })
  t.equal(res.status, 200)
  t.notOk(res.headers.has('user-id'), 'the owner is not told to the client')
  t.match(await logged('logs-api-key'), { user_id: env.adminId, status: 200 })
})

t.test('a function run is in the execution logs', { skip }, async (t) => {
  const saved = await env.request('POST', '/api/v1/functions', {
    body: {
      namespace: 'logs',
      name: 'twice',
      code: 'def handler(input, context):\n    if input.get("fail"):\n        raise ValueError("no")\n    return {"y": input["x"] * 2}\n',
    },
  })
  t.equal(saved.status, 201, saved.text)
  const ok = await env.request('POST', '/functions/logs/twice/execute', { body: { input: { x: 2 } } })
  t.equal(ok.status, 200, ok.text)
  const okId = (ok.body as { execution_id: string }).execution_id
  const bad = await env.request('POST', '/functions/logs/twice/execute', { body: { input: { fail: true } } })
  const badId = (bad.body as { execution_id?: string }).execution_id
  type Exec = {
    execution_id: string
    status: string
    kind: string
    error_code: string
    error: string
    duration_ms: number
    user_id: string
  }
  const page = await eventually(async () => {
    const r = await env.request('GET', '/api/v1/execution-logs?namespace=logs&name=twice&limit=10')
    const p = r.body as LogPage<Exec>
    return r.status === 200 && p.items.length >= 2 ? p : undefined
  }, 'two executions logged')
  t.match(
    page.items.find((e) => e.execution_id === okId),
    { kind: 'function', status: 'completed', error_code: '', user_id: env.adminId },
  )
  if (badId !== undefined)
    t.match(
      page.items.find((e) => e.execution_id === badId),
      { status: 'failed', error_code: /\w/, error: /ValueError/ },
    )
  const failed = (await env.request('GET', '/api/v1/execution-logs?status=failed&kind=function')).body as LogPage<Exec>
  t.ok(
    failed.items.every((e) => e.status === 'failed'),
    'status filter',
  )
  const mine = (await env.request('GET', `/api/v1/execution-logs?user_id=${user.id}`)).body as LogPage<Exec>
  t.equal(mine.total, 0, 'user filter: the other user ran nothing')
})

t.test('the retention sweep drops day partitions older than the retention', { skip }, async (t) => {
  const old = Date.now() - 100 * 86_400_000
  await ch.sql(
    `INSERT INTO ${database}.request_logs (ts, ts_ms, request_id, route) VALUES ('${chDateTime(old)}', ${String(old)}, 'ancient', '/old')`,
  )
  const direct = clickHouseHttp({ host: ch.host, port: ch.port, user: ch.user, password: ch.password, timeoutMs: 5000 })
  const count = async (id: string) =>
    Number((await ch.sql(`SELECT count() FROM ${database}.request_logs WHERE request_id = '${id}'`)).trim())
  t.equal(await count('ancient'), 1)
  const dropped = await sweepPartitions(direct, database, env.config.ANALYTICS_RETENTION_DAYS)
  const day = chDateTime(old).slice(0, 10).replace(/-/g, '')
  t.same(dropped, [`request_logs/${day}`], 'only the old day')
  t.equal(await count('ancient'), 0, 'its rows are gone')
  t.equal(await count('logs-agent-read'), 1, "today's stay")
})

t.test('ClickHouse down: requests answer at once, the overflow is dropped and counted', { skip }, async (t) => {
  t.match(analyticsHealth(), { status: 'ok', dropped: 0, last_error: null })
  await ch.kill()
  const worst = { ms: 0 }
  // more than the buffer (ANALYTICS_BUFFER_RECORDS=100) holds
  for (let i = 0; i < 150; i++) {
    const t0 = performance.now()
    const r = await env.request('GET', '/api/v1/agents/default/default')
    worst.ms = Math.max(worst.ms, performance.now() - t0)
    if (r.status !== 200) t.fail(`request ${String(i)}: ${String(r.status)}`)
  }
  t.ok(worst.ms < 1000, `the slowest request took ${worst.ms.toFixed(1)} ms`)
  const dropped = await eventually(async () => {
    const h = analyticsHealth()
    return h.dropped > 0 ? h : undefined
  }, 'rows dropped')
  t.equal(dropped.status, 'degraded', 'dropping rows is degraded')
  // a batch larger than the room left is dropped whole and nothing may be left to insert: a few
  // requests more are held, and their insert meets the dead server
  for (let i = 0; i < 3; i++) t.equal((await env.request('GET', '/api/v1/agents')).status, 200)
  const health = await eventually(async () => {
    const h = analyticsHealth()
    return h.last_error !== null ? h : undefined
  }, 'the failure named')
  t.equal(health.status, 'degraded')
  t.match(health.last_error, /unreachable/)
  t.ok(health.buffered <= 100, 'the buffer stays within its bound')
  const page = await env.request('GET', '/api/v1/request-logs')
  t.equal(page.status, 503, 'the log page says the store is unavailable')
  // the operators' view says so too, with the count that set it off
  const report = (await env.request('GET', '/api/v1/system/health')).body as {
    services: { name: string; status: string }[]
    warnings: { level: string; service?: string; value: number; message: string }[]
  }
  t.match(
    report.services.find((s) => s.name === 'analytics'),
    { status: 'down' },
    'the analytics store is down in the health report',
  )
  const mine = report.warnings.filter((w) => w.service === 'analytics')
  t.ok(
    mine.some((w) => w.level === 'warning' && /dropped/.test(w.message) && w.value >= health.dropped),
    'a warning counts the dropped rows',
  )
  t.ok(
    mine.some((w) => w.level === 'warning' && /does not take/.test(w.message)),
    'a warning names the failing store',
  )
})
