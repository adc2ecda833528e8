import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Icons (SPEC.md §2.16): `url:` icons checked with the guarded outbound rules on save;
 * `collection:` icons resolved on read into `icon_url` — a signed URL for the owner's private
 * file, a direct URL for a shared one, nothing for someone else's private file.
 */
let env: TestPlatform
let a: { id: string; token: string }
let b: { id: string; token: string }

t.before(async () => {
  env = await startTestPlatform(t)
  a = await env.createUser('icons-a@test.local')
  b = await env.createUser('icons-b@test.local')
})

const agent = (name: string, icon: string, token = a.token, ns = 'brand') => env.request('POST', '/api/v1/agents', { token, body: { namespace: ns, name, icon } })

t.test('url: icons pass the guarded outbound rules on save', async (t) => {
  for (const icon of ['url:http://example.com/x.png', 'url:https://127.0.0.1/x.png', 'url:https://[::1]/x.png', 'url:https://169.254.169.254/latest', 'url:https://10.1.2.3/x.png', 'url:https://localhost/x.png', 'url:https://user:pw@example.com/x.png', 'collection:nope']) {
    const res = await agent(`bad-${String(Math.random()).slice(2, 8)}`, icon)
    t.equal(res.status, 422, `${icon}: ${res.text}`)
  }
  const fn = await env.request('POST', '/api/v1/functions', { token: a.token, body: { namespace: 'brand', name: 'f', code: 'def handler(input, context):\n    return 1\n', icon: 'url:https://192.168.0.1/i.png' } })
  t.equal(fn.status, 422, 'functions too')
  const ok = await agent('good', 'url:https://example.com/icon.png')
  t.equal(ok.status, 201, ok.text)
  t.equal((ok.body as { icon_url: string }).icon_url, 'https://example.com/icon.png')
})

t.test('collection: icons resolve on read: signed URL (private, own), direct URL (shared), null (not yours)', async (t) => {
  t.equal((await env.request('POST', '/api/v1/collections', { token: a.token, body: { namespace: 'brand', name: 'icons' } })).status, 201)
  const png = Buffer.from('89504e470d0a1a0a', 'hex')
  await env.request('POST', '/files/brand/icons', { token: a.token, body: { name: 'logo.png', content_base64: png.toString('base64'), content_type: 'image/png' } })
  await env.request('POST', '/files/brand/icons', { token: a.token, body: { name: 'public.png', content_base64: png.toString('base64'), content_type: 'image/png', visibility: 'shared' } })
  t.equal((await agent('private-icon', 'collection:brand/icons/logo.png')).status, 201)
  const got = (await env.request('GET', '/api/v1/agents/brand/private-icon', { token: a.token })).body as { icon: string; icon_url: string }
  t.equal(got.icon, 'collection:brand/icons/logo.png', 'the stored value is unchanged')
  t.match(got.icon_url, /^\/files\/_signed\//)
  const img = await fetch(`${env.base}${got.icon_url}`)
  t.equal(img.status, 200)
  t.same(Buffer.from(await img.arrayBuffer()), png)
  t.equal(img.headers.get('content-type'), 'image/png')

  t.equal((await agent('shared-icon', 'collection:brand/icons/public.png')).status, 201)
  const shared = (await env.request('GET', '/api/v1/agents?namespace=brand', { token: a.token })).body as { name: string; icon_url: string }[]
  t.equal(shared.find((x) => x.name === 'shared-icon')?.icon_url, '/files/brand/icons/public.png')

  // B points an agent of B's at A's private file: nothing is signed for B
  const res = await agent('thief', 'collection:brand/icons/logo.png', b.token, 'bspace')
  t.equal(res.status, 201, res.text)
  t.equal((res.body as { icon_url: unknown }).icon_url, null)
})
