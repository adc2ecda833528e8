import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts'

/*
 * One chat turn is one trace. A platform exporting to a real OTLP/HTTP receiver (JSON) runs a turn
 * whose model calls a Python function tool; the trace the client started (its `traceparent`)
 * holds the gateway's request span, the service's handler span, the chat actor's turn, the agent
 * job, the function job, its sandbox run and both LLM calls, each linked to its parent; the fake
 * provider received the trace in its requests' `traceparent`.
 */
let env: TestPlatform
let llm: FakeLlm
let otlp: OtlpReceiver

t.before(async () => {
  otlp = await startOtlpReceiver()
  t.teardown(() => otlp.close())
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t, {
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_SERVICE_NAME: 'traces-test',
    OTEL_EXPORT_DELAY_MS: '50',
  })
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

const KIND = { internal: 1, server: 2, client: 3, consumer: 5 }

t.test('a chat turn with a function tool is one trace, from the HTTP request to the sandbox and the LLM', async (t) => {
  const chat = (await env.request('POST', '/agents/demo/helper/chats', { body: {} })).body as { id: string }
  const traceId = randomBytes(16).toString('hex')
  const clientSpan = randomBytes(8).toString('hex')
  const from = llm.requests.length
  llm.push({ tool_calls: [{ id: 'd1', name: 'tools__double', arguments: { n: 21 } }] }, { text: 'it is 42' })
  const res = await env.request('POST', `/chats/${chat.id}/messages`, {
    body: { content: 'double 21' },
    headers: { traceparent: `00-${traceId}-${clientSpan}-01` },
  })
  t.equal(res.status, 200, res.text)
  t.match(res.text, /it is 42/)
  // the module-cache check of tracing-off.test.ts sees the SDK when it is loaded
  t.ok(
    Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/@opentelemetry/sdk-trace')),
    'tracing on: the SDK is in the module cache',
  )

  const want = ['POST /chats/{id}/messages', 'chats.send', 'chat.turn', 'job agent', 'job fn', 'sandbox.run']
  const spans = await eventually(
    async () => {
      const got = otlp.trace(traceId)
      const llmCalls = got.filter((s) => s.name === 'chat fake-model').length
      return want.every((n) => got.some((s) => s.name === n)) && llmCalls === 2 ? got : undefined
    },
    `the spans ${want.join(', ')} and two LLM calls in trace ${traceId}`,
  )
  const one = (name: string): ReceivedSpan => {
    const s = spans.filter((x) => x.name === name)
    t.equal(s.length, 1, `one ${name} span`)
    return s[0] as ReceivedSpan
  }
  const http = one('POST /chats/{id}/messages')
  const rpc = one('chats.send')
  const turn = one('chat.turn')
  const agentJob = one('job agent')
  const fnJob = one('job fn')
  const sandbox = one('sandbox.run')
  const llmSpans = spans.filter((s) => s.name === 'chat fake-model')

  t.equal(http.parentSpanId, clientSpan, "the gateway's span continues the client's traceparent")
  t.equal(http.kind, KIND.server)
  t.match(http.attributes, {
    'http.request.method': 'POST',
    'http.route': '/chats/{id}/messages',
    'http.response.status_code': 200,
  })
  t.equal(rpc.parentSpanId, http.spanId, "the handler's span is the gateway span's child")
  t.equal(rpc.kind, KIND.server)
  t.equal(turn.parentSpanId, rpc.spanId, "the chat actor's turn is the handler's child")
  t.equal(turn.attributes['chat.id'], chat.id)
  t.equal(agentJob.parentSpanId, turn.spanId, 'the agent job runs under the turn')
  t.equal(agentJob.kind, KIND.consumer)
  for (const s of llmSpans) {
    t.equal(s.parentSpanId, agentJob.spanId, 'each LLM call is a child of the agent job')
    t.equal(s.kind, KIND.client)
    t.match(s.attributes, { 'gen_ai.system': 'openai', 'gen_ai.request.model': 'fake-model' })
  }
  t.equal(fnJob.parentSpanId, agentJob.spanId, "the function tool's job was asked for by the agent job")
  t.equal(sandbox.parentSpanId, fnJob.spanId, 'the sandbox run is the function job’s child')
  const ids = new Set(spans.map((s) => s.spanId))
  for (const s of spans) if (s !== http) t.ok(ids.has(s.parentSpanId), `${s.name}: its parent is in the trace`)
  t.ok(
    spans.every((s) => s.service === 'traces-test'),
    'OTEL_SERVICE_NAME names the service',
  )

  const sent = llm.requests.slice(from)
  t.equal(sent.length, 2)
  const llmIds = new Set(llmSpans.map((s) => s.spanId))
  for (const r of sent) {
    const tp = String(r.headers['traceparent'] ?? '')
    t.match(tp, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`), 'the provider request carries the trace')
    t.ok(llmIds.has(tp.slice(36, 52)), "its parent is the LLM call's span")
  }
})

t.test('a request without a traceparent starts a trace of its own', async (t) => {
  const res = await env.request('GET', '/api/v1/functions/tools/double')
  t.equal(res.status, 200, res.text)
  const span = await eventually(
    async () => otlp.spans.find((s) => s.name === 'GET /api/v1/functions/{namespace}/{name}'),
    'the span of a GET without traceparent',
  )
  t.equal(span.parentSpanId, '', 'a root span')
  const handler = await eventually(
    async () => otlp.trace(span.traceId).find((s) => s.parentSpanId === span.spanId),
    'its handler span',
  )
  t.equal(handler.kind, KIND.server)
})
