import { readFileSync } from 'node:fs'
import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The verbs of their own: `render` (templates), `download` and `upload` (collections' files),
 * `install` (approving a Python package). A verb alone is enough for its action and for nothing
 * else; a caller that may neither read nor act answers 404; and a role written before the verbs
 * existed keeps its access once migration 0024 has run on it.
 */
const env = await startTestPlatform(t)
const post = async (path: string, body: unknown, token?: string) =>
  env.request('POST', path, { body, ...(token === undefined ? {} : { token }) })
async function made(path: string, body: unknown): Promise<{ id: string }> {
  const r = await post(path, body)
  if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  return r.body as { id: string }
}
async function role(name: string, permissions: string[]): Promise<void> {
  await made('/api/v1/roles', { name, permissions: Object.fromEntries(permissions.map((p) => [p, true])) })
}
const download = async (path: string, token: string) => {
  const res = await fetch(`${env.base}${path}`, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, text: await res.text() }
}
const upload = (name: string, token: string) =>
  post('/files/vault/box', { name, content_base64: Buffer.from('x').toString('base64'), visibility: 'shared' }, token)

const tpl = await made('/api/v1/templates', {
  namespace: 'mail',
  name: 'hello',
  html_content: '<p>Hello {{ name }}</p>',
})
await made('/api/v1/collections', { namespace: 'vault', name: 'box' })
const file = await post('/files/vault/box', {
  name: 'note.txt',
  content_base64: Buffer.from('the note').toString('base64'),
  visibility: 'shared',
})
if (file.status !== 201) throw new Error(file.text)

t.test('render alone renders, and does not read or update', async (t) => {
  await role('Renderers', ['platform.templates/mail/hello.render:all'])
  const r = await env.createUser('renderer@test.local', ['Renderers'])
  const ok = await post(`/templates/${tpl.id}/render`, { variables: { name: 'Ann' } }, r.token)
  t.equal(ok.status, 200, ok.text)
  t.match(ok.body, { html_content: '<p>Hello Ann</p>' })
  t.equal((await env.request('GET', `/api/v1/templates/${tpl.id}`, { token: r.token })).status, 404, 'no read')
  const patch = await env.request('PATCH', `/api/v1/templates/${tpl.id}`, {
    token: r.token,
    body: { html_content: '<p>mine</p>' },
  })
  t.equal(patch.status, 404, 'no update')
  await role('TemplateReaders', ['platform.templates/mail/hello.read:all'])
  const reader = await env.createUser('template-reader@test.local', ['TemplateReaders'])
  t.equal(
    (await post(`/templates/${tpl.id}/render`, { variables: { name: 'Ann' } }, reader.token)).status,
    403,
    'read without render: seen, not rendered',
  )
  const nobody = await env.createUser('template-nobody@test.local', [])
  t.equal(
    (await post(`/templates/${tpl.id}/render`, { variables: { name: 'Ann' } }, nobody.token)).status,
    404,
    'neither: 404',
  )
})

t.test('download alone downloads, and does not upload', async (t) => {
  await role('Downloaders', ['platform.collections/vault/box.download:all'])
  const d = await env.createUser('downloader@test.local', ['Downloaders'])
  const got = await download('/files/vault/box/note.txt', d.token)
  t.equal(got.status, 200)
  t.equal(got.text, 'the note')
  t.equal((await upload('planted.txt', d.token)).status, 404, 'no upload (and no read: the same 404 as for a stranger)')
  await role('BoxReaders', ['platform.collections/vault/box.read:all', 'platform.collections/vault/box.download:all'])
  const reader = await env.createUser('box-reader@test.local', ['BoxReaders'])
  t.equal((await upload('planted.txt', reader.token)).status, 403, 'seen, but no upload')
  await role('Uploaders', ['platform.collections/vault/box.upload:all'])
  const u = await env.createUser('uploader@test.local', ['Uploaders'])
  const up = await upload('dropped.txt', u.token)
  t.equal(up.status, 201, up.text)
  t.equal((await download('/files/vault/box/note.txt', u.token)).status, 404, 'upload alone does not download')
})

t.test('a role from before the verbs keeps its access once migration 0024 ran', async (t) => {
  const legacy = [
    'platform.templates/*/*.read:all',
    'platform.collections/*/*.read:all',
    'platform.collections/*/*.update:all',
    'platform.dependencies.update:all',
  ]
  await role('Legacy', legacy)
  const [key] = await env.sql<{ id: string }>(
    `insert into api_keys (user_id, name, key_hash, key_prefix, permissions) select id, 'legacy', 'legacy-hash', 'legacy', '{"platform.templates/mail/*.read:own": true}'::jsonb from users limit 1 returning id`,
  )
  const old = await env.createUser('legacy@test.local', ['Legacy'])
  t.equal(
    (await post(`/templates/${tpl.id}/render`, { variables: { name: 'B' } }, old.token)).status,
    403,
    'before: the old verb no longer renders',
  )
  const dep = await made('/api/v1/dependencies', { package_name: 'legacy-pkg' })
  t.equal(
    (await post(`/api/v1/dependencies/${dep.id}/approve`, {}, old.token)).status,
    403,
    'before: update no longer approves',
  )

  await env.sql(
    readFileSync(new URL('../../src/platform/migrations/0024-permission-verbs.sql', import.meta.url), 'utf8'),
  )
  // the file starts with a comment, so env.sql does not see a roles write: make every process read the principals again
  await env.sql('update roles set permissions = permissions where false')
  const [after] = await env.sql<{ permissions: Record<string, boolean> }>(
    `select permissions from roles where name = 'Legacy'`,
  )
  t.same(
    Object.keys(after?.permissions ?? {}).sort(),
    [
      ...legacy,
      'platform.collections/*/*.download:all',
      'platform.collections/*/*.upload:all',
      'platform.dependencies.install:all',
      'platform.templates/*/*.render:all',
    ].sort(),
    'each old grant brought its new verb, same path and scope',
  )
  const [k] = await env.sql<{ permissions: Record<string, boolean> }>(
    'select permissions from api_keys where id = $1',
    [key?.id],
  )
  t.same(
    k?.permissions,
    { 'platform.templates/mail/*.read:own': true, 'platform.templates/mail/*.render:own': true },
    'API keys too',
  )
  t.equal(
    (await post(`/templates/${tpl.id}/render`, { variables: { name: 'B' } }, old.token)).status,
    200,
    'renders again',
  )
  t.equal((await download('/files/vault/box/note.txt', old.token)).status, 200, 'downloads')
  t.equal((await upload('legacy.txt', old.token)).status, 201, 'uploads')
  t.equal((await post(`/api/v1/dependencies/${dep.id}/approve`, {}, old.token)).status, 200, 'approves')
  const [users] = await env.sql<{ permissions: Record<string, boolean> }>(
    `select permissions from roles where name = 'Users'`,
  )
  t.ok(
    [
      'platform.templates/*/*.render:own',
      'platform.collections/*/*.upload:own',
      'platform.collections/*/*.download:own',
    ].every((p) => users?.permissions[p] === true),
    'the default Users role holds the new verbs',
  )
})
