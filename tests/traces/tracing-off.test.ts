import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import t from 'tap'
import { tracing, tracingLoaded } from '../../src/platform/tracing.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.ts'

/*
 * Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT, the default): a chat turn with a function tool,
 * sent with a client's `traceparent`, loads no OpenTelemetry SDK, exporter or propagator module
 * (none in the module cache, where Node keeps every package file it loaded; the tracing module's
 * own flag agrees) — only `@opentelemetry/api`, which slonik (the Postgres client) imports itself
 * and which stays a no-op without a registered tracer provider (the platform registers none) —
 * exports nothing, and passes no trace context on (the provider request has no `traceparent`).
 * The OTel SDK's own environment variable points at a receiver in this process: were the SDK
 * loaded by anything, it would export there.
 */
let env: TestPlatform
let llm: FakeLlm
let otlp: OtlpReceiver
const loadedOtel = (): string[] =>
  Object.keys(createRequire(import.meta.url).cache).filter(
    (k) => k.includes('/@opentelemetry/') && !k.includes('/@opentelemetry/api/'),
  )

t.before(async () => {
  otlp = await startOtlpReceiver()
  t.teardown(() => otlp.close())
  process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = otlp.url
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  const mk = async (path: string, body: unknown) => {
    const r = await env.request('POST', path, { body })
    if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  }
  await mk('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  await mk('/api/v1/functions', {
    namespace: 'tools',
    name: 'double',
    description: 'doubles n',
    code: 'def handler(input, context):\n    return {"double": 2 * input.get("n", 0)}\n',
  })
  await mk('/api/v1/agents', { namespace: 'demo', name: 'helper', enabled_functions: ['tools/double'] })
})

t.test('off: nothing loaded, nothing exported, no trace context passed on', async (t) => {
  t.equal(env.config.OTEL_EXPORTER_OTLP_ENDPOINT, '', 'off by default')
  const chat = (await env.request('POST', '/agents/demo/helper/chats', { body: {} })).body as { id: string }
  const from = llm.requests.length
  llm.push({ tool_calls: [{ id: 'd1', name: 'tools__double', arguments: { n: 21 } }] }, { text: 'it is 42' })
  const res = await env.request('POST', `/chats/${chat.id}/messages`, {
    body: { content: 'double 21' },
    headers: { traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01` },
  })
  t.equal(res.status, 200, res.text)
  t.match(res.text, /it is 42/)
  const sent = llm.requests.slice(from)
  t.equal(sent.length, 2, 'the tool call and the answer')
  t.ok(
    sent.every((r) => r.headers['traceparent'] === undefined),
    'the provider requests carry no traceparent',
  )
  t.equal(tracing.on, false)
  t.equal(tracingLoaded(), false, 'the tracing module never imported the SDK')
  t.same(loadedOtel(), [], 'no @opentelemetry file but the API slonik imports in the module cache')
  // a stop flushes whatever an exporter would hold: after it, still nothing arrived
  await env.platform.close()
  t.equal(otlp.posts, 0, 'nothing was exported')
})
