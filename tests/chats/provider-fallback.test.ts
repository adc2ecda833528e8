import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * Provider resolution of a turn (src/llm/registry.ts resolveProvider): an agent whose own provider
 * was deleted or disabled is answered by the system default provider (with the agent's model, else
 * the default provider's default_model); only when there is no usable default either does the turn
 * fail with llm.provider_not_found. The two providers point at different fake protocols (OpenAI
 * wire for the default, Anthropic for the agent's own) so the request shows which one answered.
 */
let env: TestPlatform
let llm: FakeLlm
const post = async (path: string, body: unknown) => env.request('POST', path, { body })
const mk = async (path: string, body: unknown) => {
  const r = await post(path, body)
  if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  return (r.body as { id: string }).id
}
const newChat = async (agent: string) => ((await post(`/agents/demo/${agent}/chats`, {})).body as { id: string }).id
let defaultId = ''

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  defaultId = await mk('/api/v1/llm-providers', {
    name: 'main',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'main-model',
    is_default: true,
  })
})

t.test("the agent's own provider answers while it is usable", async (t) => {
  const own = await mk('/api/v1/llm-providers', {
    name: 'own-ok',
    provider_type: 'anthropic',
    api_endpoint: llm.endpoint('anthropic'),
    api_key: 'sk-ant',
    default_model: 'own-model',
  })
  await mk('/api/v1/agents', { namespace: 'demo', name: 'pinned-ok', llm_provider_id: own })
  const from = llm.requests.length
  llm.push({ text: 'from own' })
  const res = await post(`/chats/${await newChat('pinned-ok')}/messages`, { content: 'hi' })
  t.equal(res.status, 200, res.text)
  t.match(llm.requests.slice(from), [{ protocol: 'anthropic', body: { model: 'own-model' } }])
})

t.test('a deleted agent provider falls back to the default provider', async (t) => {
  const own = await mk('/api/v1/llm-providers', {
    name: 'own-deleted',
    provider_type: 'anthropic',
    api_endpoint: llm.endpoint('anthropic'),
    api_key: 'sk-ant',
    default_model: 'own-model',
  })
  await mk('/api/v1/agents', { namespace: 'demo', name: 'pinned-deleted', llm_provider_id: own })
  t.equal((await env.request('DELETE', `/api/v1/llm-providers/${own}`)).status, 204)
  const from = llm.requests.length
  llm.push({ text: 'from the default' })
  const res = await post(`/chats/${await newChat('pinned-deleted')}/messages`, { content: 'hi' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'from the default' })
  t.match(
    llm.requests.slice(from),
    [{ protocol: 'openai', body: { model: 'main-model' } }],
    'the default provider with its default_model',
  )
})

t.test("a disabled agent provider falls back to the default provider, with the agent's model", async (t) => {
  const own = await mk('/api/v1/llm-providers', {
    name: 'own-disabled',
    provider_type: 'anthropic',
    api_endpoint: llm.endpoint('anthropic'),
    api_key: 'sk-ant',
    default_model: 'own-model',
  })
  await mk('/api/v1/agents', { namespace: 'demo', name: 'pinned-disabled', llm_provider_id: own, model: 'agent-model' })
  const off = await env.request('PATCH', `/api/v1/llm-providers/${own}`, { body: { is_active: false } })
  t.equal(off.status, 200, off.text)
  const from = llm.requests.length
  llm.push({ text: 'from the default' })
  const res = await post(`/chats/${await newChat('pinned-disabled')}/messages`, { content: 'hi' })
  t.equal(res.status, 200, res.text)
  t.match(llm.requests.slice(from), [{ protocol: 'openai', body: { model: 'agent-model' } }])
})

t.test('no usable default either: the turn fails with llm.provider_not_found', async (t) => {
  const own = await mk('/api/v1/llm-providers', {
    name: 'own-gone',
    provider_type: 'anthropic',
    api_endpoint: llm.endpoint('anthropic'),
    api_key: 'sk-ant',
    default_model: 'own-model',
  })
  await mk('/api/v1/agents', { namespace: 'demo', name: 'pinned-gone', llm_provider_id: own })
  t.equal((await env.request('DELETE', `/api/v1/llm-providers/${own}`)).status, 204)
  const off = await env.request('PATCH', `/api/v1/llm-providers/${defaultId}`, { body: { is_active: false } })
  t.equal(off.status, 200, off.text)
  t.teardown(async () => {
    await env.request('PATCH', `/api/v1/llm-providers/${defaultId}`, { body: { is_active: true } })
  })
  const from = llm.requests.length
  const res = await post(`/chats/${await newChat('pinned-gone')}/messages`, { content: 'hi' })
  t.equal(res.status, 502, res.text)
  t.match(res.body, { code: 'chat.turn_failed', detail: /does not exist and no default provider is configured/ })
  t.equal(llm.requests.length, from, 'no provider was called')
})
