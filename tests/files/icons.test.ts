import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Icons: `url:` icons checked with the guarded outbound rules on save;
 * `collection:` icons resolved on read into `icon_url` — a signed URL that loads without any
 * credentials (as an <img> would) for the owner's private file and for a shared file the owner may
 * read; nothing for someone else's private file or a collection the owner cannot read.
 */
let env: TestPlatform
let a: { id: string; token: string }
let b: { id: string; token: string }

t.before(async () => {
  env = await startTestPlatform(t)
  a = await env.createUser('icons-a@test.local')
  b = await env.createUser('icons-b@test.local')
})

const agent = (name: string, icon: string, token = a.token, ns = 'brand') =>
  env.request('POST', '/api/v1/agents', { token, body: { namespace: ns, name, icon } })

t.test('url: icons pass the guarded outbound rules on save', async (t) => {
  for (const icon of [
    'url:http://example.com/x.png',
    'url:https://127.0.0.1/x.png',
    'url:https://[::1]/x.png',
    'url:https://169.254.169.254/latest',
    'url:https://10.1.2.3/x.png',
    'url:https://localhost/x.png',
    'url:https://user:pw@example.com/x.png',
    'collection:nope',
  ]) {
    const res = await agent(`bad-${String(Math.random()).slice(2, 8)}`, icon)
    t.equal(res.status, 422, `${icon}: ${res.text}`)
  }
  const fn = await env.request('POST', '/api/v1/functions', {
    token: a.token,
    body: {
      namespace: 'brand',
      name: 'f',
      code: 'def handler(input, context):\n    return 1\n',
      icon: 'url:https://192.168.0.1/i.png',
    },
  })
  t.equal(fn.status, 422, 'functions too')
  const ok = await agent('good', 'url:https://example.com/icon.png')
  t.equal(ok.status, 201, ok.text)
  t.equal((ok.body as { icon_url: string }).icon_url, 'https://example.com/icon.png')
})

t.test('collection: icons resolve on read: signed URL (own private, readable shared), null (not yours)', async (t) => {
  t.equal(
    (await env.request('POST', '/api/v1/collections', { token: a.token, body: { namespace: 'brand', name: 'icons' } }))
      .status,
    201,
  )
  const png = Buffer.from('89504e470d0a1a0a', 'hex')
  await env.request('POST', '/files/brand/icons', {
    token: a.token,
    body: { name: 'logo.png', content_base64: png.toString('base64'), content_type: 'image/png' },
  })
  await env.request('POST', '/files/brand/icons', {
    token: a.token,
    body: {
      name: 'public.png',
      content_base64: png.toString('base64'),
      content_type: 'image/png',
      visibility: 'shared',
    },
  })
  t.equal((await agent('private-icon', 'collection:brand/icons/logo.png')).status, 201)
  const got = (await env.request('GET', '/api/v1/agents/brand/private-icon', { token: a.token })).body as {
    icon: string
    icon_url: string
  }
  t.equal(got.icon, 'collection:brand/icons/logo.png', 'the stored value is unchanged')
  t.match(got.icon_url, /^\/files\/_signed\//)
  const img = await fetch(`${env.base}${got.icon_url}`) // no Authorization header, no cookie
  t.equal(img.status, 200)
  t.same(Buffer.from(await img.arrayBuffer()), png)
  t.equal(img.headers.get('content-type'), 'image/png')

  t.equal((await agent('shared-icon', 'collection:brand/icons/public.png')).status, 201)
  const listed = (await env.request('GET', '/api/v1/agents?namespace=brand', { token: a.token })).body as {
    name: string
    icon_url: string
  }[]
  const sharedUrl = listed.find((x) => x.name === 'shared-icon')?.icon_url ?? ''
  t.match(sharedUrl, /^\/files\/_signed\//, 'a shared file is signed too: /files/… would need a bearer token')
  const sharedImg = await fetch(`${env.base}${sharedUrl}`) // as an <img> loads it: no credentials
  t.equal(sharedImg.status, 200)
  t.same(Buffer.from(await sharedImg.arrayBuffer()), png)
  t.equal(sharedImg.headers.get('content-type'), 'image/png')
  t.equal(
    (await fetch(`${env.base}/files/brand/icons/public.png`)).status,
    401,
    'the plain file route still needs a token',
  )

  // B points an agent of B's at A's private file: nothing is signed for B
  const res = await agent('thief', 'collection:brand/icons/logo.png', b.token, 'bspace')
  t.equal(res.status, 201, res.text)
  t.equal((res.body as { icon_url: unknown }).icon_url, null)
  // ... nor for A's shared file, since B cannot read A's collection: the unauthenticated URL must
  // not become a way around the collection's read permission
  const peek = await agent('peek', 'collection:brand/icons/public.png', b.token, 'bspace')
  t.equal(peek.status, 201, peek.text)
  t.equal((peek.body as { icon_url: unknown }).icon_url, null)
  // once A lets B read the collection, B's agent may show the shared file (not the private one)
  const role = await env.request('POST', '/api/v1/roles', {
    body: { name: 'IconReaders', permissions: { 'platform.collections/brand/icons.read:all': true } },
  })
  t.equal(role.status, 201, role.text)
  const added = await env.request('POST', `/api/v1/roles/IconReaders/users/${b.id}`)
  t.ok(added.status < 300, added.text)
  const got2 = (await env.request('GET', '/api/v1/agents/bspace/peek', { token: b.token })).body as {
    icon_url: string | null
  }
  t.match(got2.icon_url, /^\/files\/_signed\//, "B may read A's collection now: B's agent shows the shared file")
  t.equal((await fetch(`${env.base}${got2.icon_url ?? ''}`)).status, 200)
  t.equal(
    ((await env.request('GET', '/api/v1/agents/bspace/thief', { token: b.token })).body as { icon_url: unknown })
      .icon_url,
    null,
    "A's private file stays out",
  )
})
