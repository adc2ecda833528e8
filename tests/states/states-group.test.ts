import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The runtime path group `/states`: `/states/{namespace}/{name}` (list, create) and
 * `/states/{namespace}/{name}/{key}` (get, put, delete) serve the same entries as
 * `/stores/{namespace}/{name}/states…`, with the same handlers, permissions and answers, and are
 * documented in the runtime OpenAPI document.
 */
const env = await startTestPlatform(t)
type Entry = { key: string; value: unknown; store: string; owner_id: string }
const a = await env.createUser('group-a@test.local')
const c = await env.createUser('group-c@test.local')
const role = await env.request('POST', '/api/v1/roles', {
  body: { name: 'BoardReaders', permissions: { 'platform.stores/team/board.read_state:all': true } },
})
if (role.status !== 201) throw new Error(role.text)
const b = await env.createUser('group-b@test.local', ['Users', 'BoardReaders'])
for (const [ns, name, extra] of [
  ['mine', 'notes', {}],
  ['team', 'board', { default_visibility: 'shared' }],
] as const) {
  const r = await env.request('POST', '/api/v1/stores', { token: a.token, body: { namespace: ns, name, ...extra } })
  if (r.status !== 201) throw new Error(r.text)
}
const req = (token: string, method: string, path: string, body?: unknown) =>
  env.request(method, path, { token, ...(body === undefined ? {} : { body }) })

t.test('CRUD on /states paths, the same entries as under /stores', async (t) => {
  const made = await req(a.token, 'POST', '/states/mine/notes', { key: 'greeting', value: { text: 'hi' }, tags: ['x'] })
  t.equal(made.status, 201, made.text)
  t.match(made.body, { key: 'greeting', value: { text: 'hi' }, store: 'mine/notes', owner_id: a.id })
  t.equal(
    (await req(a.token, 'POST', '/states/mine/notes', { key: 'greeting', value: 2 })).status,
    409,
    'a key is created once, as under /stores',
  )
  t.match((await req(a.token, 'GET', '/states/mine/notes/greeting')).body, { value: { text: 'hi' } })
  t.match(
    (await req(a.token, 'GET', '/stores/mine/notes/states/greeting')).body,
    { value: { text: 'hi' } },
    "the entry is the store path's",
  )
  const changed = await req(a.token, 'PUT', '/states/mine/notes/greeting', { value: [1, 2] })
  t.equal(changed.status, 200, changed.text)
  const upsert = await req(a.token, 'PUT', '/states/mine/notes/fresh', { value: null })
  t.equal(upsert.status, 201, 'PUT creates an absent key')
  const list = await req(a.token, 'GET', '/states/mine/notes?search=gr&limit=10')
  t.equal(list.status, 200)
  t.same(
    (list.body as Entry[]).map((e) => e.key),
    ['greeting'],
    'search is a key prefix',
  )
  t.equal(list.headers.get('x-total-count'), '1')
  t.same(
    ((await req(a.token, 'GET', '/states/mine/notes')).body as Entry[]).map((e) => e.key),
    ['fresh', 'greeting'],
  )
  t.equal((await req(a.token, 'DELETE', '/states/mine/notes/greeting')).status, 204)
  const gone = await req(a.token, 'GET', '/stores/mine/notes/states/greeting')
  t.equal(gone.status, 404, 'deleted on one path, gone on the other')
  t.match((await req(a.token, 'GET', '/states/mine/notes/greeting')).body, { code: 'state.not_found' })
})

t.test('the same permissions: invisible stores answer 404, a read grant does not write', async (t) => {
  t.equal((await req(a.token, 'POST', '/states/team/board', { key: 'plan', value: 'ship' })).status, 201)
  const other = await req(c.token, 'GET', '/states/mine/notes')
  t.equal(other.status, 404, "another user's store is not found")
  t.match(other.body, { code: 'store.not_found' })
  t.equal((await req(c.token, 'GET', '/states/team/board/plan')).status, 404)
  t.match(
    (await req(b.token, 'GET', '/states/team/board/plan')).body,
    { value: 'ship' },
    'a read_state grant reads a shared entry',
  )
  const write = await req(b.token, 'PUT', '/states/team/board/plan', { value: 'wait' })
  t.equal(write.status, 403, 'without write_state the entry is not changed')
  t.equal((await req(b.token, 'DELETE', '/states/team/board/plan')).status, 403)
  t.equal((await env.request('GET', '/states/team/board', { token: null })).status, 401, 'a token is required')
})

t.test('documented in the runtime OpenAPI document', async (t) => {
  const doc = (await env.request('GET', '/openapi.json', { token: null })).body as {
    paths: Record<string, Record<string, unknown>>
  }
  t.same(Object.keys(doc.paths['/states/{namespace}/{name}'] ?? {}).sort(), ['get', 'post'])
  t.same(Object.keys(doc.paths['/states/{namespace}/{name}/{key}'] ?? {}).sort(), ['delete', 'get', 'put'])
})
