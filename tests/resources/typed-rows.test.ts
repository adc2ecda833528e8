import t from 'tap'
import type { Principal } from '../../src/auth/principal.ts'
import { chatStore } from '../../src/chats/store.ts'
import { functionKind } from '../../src/kinds/function/kind.ts'
import { llmProviderKind } from '../../src/kinds/llm-provider/kind.ts'
import { loadProviderCandidates } from '../../src/llm/registry.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The resource engine, the chat store and the LLM registry read their rows through typed rows
 * (src/platform/typed-rows.ts): a row that does not match its schema (a column changed under the
 * code) is a 500 `internal` naming the row, never a wrong value passed on to the caller.
 */
const env = await startTestPlatform(t)
const db = env.platform.db
const service = env.platform.resources
if (db === undefined || service === undefined) throw new Error('platform without database or resource service')
const admin: Principal = { userId: env.adminId, email: 'admin@test.local', permissions: ['platform.*:all'] }
const code = 'def handler(input, context):\n    return input\n'

t.test('a resource row reads as its record, and one whose spec is not an object is an internal error', async (t) => {
  const created = await service.create(admin, functionKind, { namespace: 'rows', name: 'shape', code })
  const got = await env.request('GET', '/api/v1/functions/rows/shape')
  t.equal(got.status, 200, got.text)
  t.match(got.body, {
    id: created['id'],
    namespace: 'rows',
    name: 'shape',
    code,
    version: 1,
    is_active: true,
    owner_id: env.adminId,
    created_at: /^\d{4}-\d\d-\d\dT/,
  })
  const versions = await env.request('GET', '/api/v1/functions/rows/shape/versions')
  t.equal(versions.status, 200, versions.text)
  t.match(versions.body, [{ version: 1, fields: { code }, created_by: env.adminId, created_at: /^\d{4}-\d\d-\d\dT/ }])

  await env.sql(`update resources set spec = '[1, 2]'::jsonb where id = $1`, [created['id']])
  const broken = await env.request('GET', '/api/v1/functions/rows/shape')
  t.equal(broken.status, 500, broken.text)
  t.match(broken.body, { code: 'internal' })
  await t.rejects(service.get(admin, functionKind, { namespace: 'rows', name: 'shape' }), {
    status: 500,
    code: 'internal',
    message: /a resource row does not match its schema at \/spec/,
  })
})

t.test('a chat row whose input is not an object is an internal error', async (t) => {
  const store = chatStore(db)
  const chat = await store.create({
    userId: env.adminId,
    agent: { id: env.adminId, namespace: 'rows', name: 'agent' },
    input: { customer: 'X' },
  })
  t.match(await store.get(chat.id), {
    id: chat.id,
    input: { customer: 'X' },
    archived: false,
    internal: false,
    created_at: /^\d{4}-\d\d-\d\dT/,
  })
  await env.sql(`update chats set input = '5'::jsonb where id = $1`, [chat.id])
  await t.rejects(store.get(chat.id), {
    status: 500,
    code: 'internal',
    message: /a chat row does not match its schema at \/input/,
  })
})

t.test(
  'an llm provider row whose spec is not an object is an internal error, not an unknown provider type',
  async (t) => {
    const created = await service.create(admin, llmProviderKind, {
      name: 'rows-llm',
      provider_type: 'openai',
      api_endpoint: 'http://127.0.0.1:9/v1',
      api_key: 'sk-rows',
      default_model: 'm',
    })
    const id = String(created['id'])
    t.match(await loadProviderCandidates(service, { llm_provider_id: id, model: null }), [
      { id, name: 'rows-llm', provider_type: 'openai', default_model: 'm' },
    ])
    await env.sql(`update resources set spec = '"openai"'::jsonb where id = $1`, [id])
    await t.rejects(loadProviderCandidates(service, { llm_provider_id: id, model: null }), {
      status: 500,
      code: 'internal',
      message: /a resource row does not match its schema at \/spec/,
    })
  },
)
