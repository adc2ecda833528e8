import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { allRoutes } from '../../src/main.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'
import { eventually } from '../helpers/eventually.ts'
import { startPrometheus, type Prometheus } from '../helpers/prometheus.ts'

/*
 * The platform's Prometheus endpoint against a real Prometheus: a platform with METRICS_TOKEN (so
 * /metrics is on its gateway port behind a bearer token), some requests, a chat turn with the fake
 * LLM and an open SSE stream; Debian's prometheus scrapes it every second and its query API must
 * come to show the request histogram by route, the LLM tokens by model, the jobs by state and the
 * SSE gauge. The exposition itself is parsed and held to the documented names, types and labels
 * (docs/operations.md#metrics).
 */
const TOKEN = 'scrape-token-for-the-test'

/** Every metric of the platform (besides prom-client's process metrics): type and label names, as documented. */
const DOCUMENTED: Record<string, { type: string; labels: string[] }> = {
  agent_platform_http_request_duration_seconds: { type: 'histogram', labels: ['route', 'status'] },
  agent_platform_llm_calls_total: { type: 'counter', labels: ['provider', 'model', 'outcome'] },
  agent_platform_llm_tokens_total: { type: 'counter', labels: ['provider', 'model', 'direction'] },
  agent_platform_llm_call_duration_seconds: { type: 'histogram', labels: ['provider', 'model'] },
  agent_platform_nats_rtt_seconds: { type: 'gauge', labels: [] },
  agent_platform_job_consumer_pending_messages: { type: 'gauge', labels: ['pool'] },
  agent_platform_job_consumer_ack_pending_messages: { type: 'gauge', labels: ['pool'] },
  agent_platform_jobs: { type: 'gauge', labels: ['pool', 'state'] },
  agent_platform_actor_partitions_owned: { type: 'gauge', labels: ['actor_type'] },
  agent_platform_sandboxes: { type: 'gauge', labels: ['state'] },
  agent_platform_sandboxes_max: { type: 'gauge', labels: [] },
  agent_platform_sandbox_waiting_requests: { type: 'gauge', labels: [] },
  agent_platform_sse_streams_open: { type: 'gauge', labels: [] },
}

interface Family {
  type: string
  samples: { name: string; labels: Record<string, string>; value: number }[]
}

/** The text exposition format (0.0.4) parsed: families by name with their samples; throws on a line it cannot read. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>()
  const familyOf = (sample: string): Family | undefined =>
    families.get(sample) ?? families.get(sample.replace(/_(bucket|sum|count|total)$/, ''))
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ')) continue
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line)
    if (type !== null) {
      families.set(type[1] as string, { type: type[2] as string, samples: [] })
      continue
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (m === null) throw new Error(`unreadable exposition line: ${line}`)
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = l[2] as string
    const value = Number(m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : m[3])
    if (Number.isNaN(value) && m[3] !== 'NaN') throw new Error(`unreadable value: ${line}`)
    const family = familyOf(m[1] as string)
    if (family === undefined) throw new Error(`a sample before its TYPE line: ${line}`)
    family.samples.push({ name: m[1] as string, labels, value })
  }
  return families
}

let env: TestPlatform
let llm: FakeLlm
let prom: Prometheus
let stream: AbortController | undefined

const routeId = (method: string, path: string): string => {
  const r = allRoutes().find((x) => x.method === method && x.path === path)
  if (r === undefined) throw new Error(`no route ${method} ${path}`)
  return r.id
}

const scrape = (token?: string) =>
  fetch(`${env.base}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t, { METRICS_TOKEN: TOKEN })
  const provider = await env.request('POST', '/api/v1/llm-providers', {
    body: {
      name: 'fake',
      provider_type: 'openai',
      api_endpoint: llm.endpoint('openai'),
      api_key: 'sk-fake',
      default_model: 'fake-model',
      is_default: true,
    },
  })
  if (provider.status !== 201) throw new Error(provider.text)
  prom = await startPrometheus(t, [{ address: new URL(env.base).host, token: TOKEN }])
  t.teardown(() => stream?.abort())
})

t.test('GET /metrics needs the bearer token METRICS_TOKEN', async (t) => {
  t.equal((await scrape()).status, 401, 'no token')
  t.equal((await scrape('wrong')).status, 401, 'a wrong token')
  const ok = await scrape(TOKEN)
  t.equal(ok.status, 200)
  t.match(ok.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
})

t.test('requests, a chat turn and an SSE stream show in a real Prometheus', async (t) => {
  if (prom.skip !== false) {
    t.comment(`skipped: ${prom.skip}`)
    t.pass(`skipped: ${prom.skip}`)
    return
  }
  for (let i = 0; i < 5; i++) t.equal((await env.request('GET', '/api/v1/agents/default/default')).status, 200)
  t.equal((await env.request('GET', '/no/such/path')).status, 404)
  const chat = await env.request('POST', '/agents/default/default/chats', { body: {} })
  t.equal(chat.status, 201, chat.text)
  llm.push({ text: ['Hello', ' there'], usage: { prompt_tokens: 11, completion_tokens: 7 } })
  const turn = await env.request('POST', `/chats/${(chat.body as { id: string }).id}/messages`, {
    body: { content: 'hi' },
  })
  t.equal(turn.status, 200, turn.text)
  // an SSE stream held open until the end of the file
  stream = new AbortController()
  const events = await fetch(`${env.base}/api/v1/events/stream`, {
    headers: { authorization: `Bearer ${env.adminToken}` },
    signal: stream.signal,
  })
  t.equal(events.status, 200)

  const agentsGet = routeId('GET', '/api/v1/agents/{namespace}/{name}')
  const value = async (promql: string, at = (v: number) => v > 0): Promise<number | undefined> => {
    const [s] = await prom.query(promql)
    return s !== undefined && at(s.value) ? s.value : undefined
  }
  t.equal(await eventually(() => value('up'), 'the target up', 30_000, 200), 1, 'the scrape authenticates')
  t.equal(
    await eventually(
      () =>
        value(
          `sum(agent_platform_http_request_duration_seconds_count{route="${agentsGet}",status="200"})`,
          (v) => v >= 5,
        ),
      'the request histogram of the agent read',
      30_000,
      200,
    ),
    5,
    'five reads counted under the route id, not the URL',
  )
  t.ok(
    await eventually(
      () => value('sum(agent_platform_http_request_duration_seconds_count{route="unmatched",status="404"})'),
      'the unmatched 404',
      30_000,
      200,
    ),
  )
  t.same(await prom.query('count({__name__="agent_platform_http_request_duration_seconds_count",route=~"/.*"})'), [])
  t.equal(
    await eventually(
      () => value('agent_platform_llm_tokens_total{provider="openai",model="fake-model",direction="output"}'),
      'output tokens by model',
      30_000,
      200,
    ),
    7,
  )
  t.equal(await value('agent_platform_llm_tokens_total{model="fake-model",direction="input"}'), 11)
  t.equal(await value('agent_platform_llm_calls_total{model="fake-model",outcome="ok"}'), 1)
  t.ok(
    await eventually(
      () => value('agent_platform_jobs{pool="agent",state="completed"}'),
      'the completed agent job',
      30_000,
      200,
    ),
    'jobs by state',
  )
  t.equal(
    (await prom.query('agent_platform_jobs{pool="fn"}')).length,
    6,
    'every state of a pool is a series, zeros included',
  )
  t.equal(
    await eventually(() => value('agent_platform_sse_streams_open', (v) => v === 1), 'the SSE gauge', 30_000, 200),
    1,
  )
  t.equal((await prom.query('agent_platform_job_consumer_pending_messages')).length, 3, 'a backlog per pool')
  t.ok(await value('sum(agent_platform_actor_partitions_owned)'), 'this host owns partitions')
  t.ok(await value('agent_platform_nats_rtt_seconds'), 'the NATS round trip')
  t.ok(await value('sum(agent_platform_sandboxes)', (v) => v >= 0), 'the sandbox pool')
  // the documented dashboard queries (docs/operations.md#metrics) are valid PromQL that answers
  const p95 = await eventually(
    async () => {
      // rate() needs the counter to move between scrapes: one more read per poll
      await env.request('GET', '/api/v1/agents/default/default')
      const all = await prom.query(
        'histogram_quantile(0.95, sum by (route, le) (rate(agent_platform_http_request_duration_seconds_bucket[1m])))',
      )
      return all.find((s) => s.metric['route'] === agentsGet && Number.isFinite(s.value))
    },
    'the p95 by route',
    30_000,
    500,
  )
  t.ok(p95.value > 0, 'p95 by route (docs/operations.md#metrics)')
  stream.abort()
  t.equal(
    await eventually(
      () => value('agent_platform_sse_streams_open', (v) => v === 0),
      'the SSE gauge back to 0',
      30_000,
      200,
    ),
    0,
  )
})

t.test('the exposition parses; names, types and labels are as documented', async (t) => {
  const text = await (await scrape(TOKEN)).text()
  const families = parseExposition(text)
  for (const [name, doc] of Object.entries(DOCUMENTED)) {
    const f = families.get(name)
    if (f === undefined) {
      t.fail(`${name} is not exposed`)
      continue
    }
    t.equal(f.type, doc.type, `${name} is a ${doc.type}`)
    for (const s of f.samples) {
      const names = Object.keys(s.labels)
        .filter((l) => l !== 'le')
        .sort()
      t.same(names, [...doc.labels].sort(), `${s.name} has the labels ${doc.labels.join(', ') || '(none)'}`)
    }
  }
  for (const name of families.keys()) t.match(name, /^agent_platform_/, `${name} carries the prefix`)
  const own = [...families.keys()].filter(
    (n) => !n.startsWith('agent_platform_process_') && !n.startsWith('agent_platform_nodejs_'),
  )
  t.same(own.sort(), Object.keys(DOCUMENTED).sort(), 'no undocumented metric besides the process ones')
  const operations = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'operations.md'), 'utf8')
  for (const name of Object.keys(DOCUMENTED))
    t.ok(operations.includes(`\`${name}\``), `docs/operations.md lists ${name}`)
  // a histogram's buckets are cumulative and end with +Inf equal to its count
  const http = families.get('agent_platform_http_request_duration_seconds') as Family
  const health = http.samples.filter((s) => s.labels['route'] === 'metrics' && s.labels['status'] === '200')
  const buckets = health.filter((s) => s.name.endsWith('_bucket')).map((s) => s.value)
  t.same(
    buckets,
    [...buckets].sort((a, b) => a - b),
    'cumulative buckets',
  )
  t.equal(buckets.at(-1), health.find((s) => s.name.endsWith('_count'))?.value, '+Inf is the count')
})
