import https from 'node:https'
import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'
import { requireLocalTls } from '../helpers/local-https.ts'
import { startOAuthMcp } from './oauth-mcp-server.ts'

/*
 * A remote MCP server with `auth.type: oauth` against the official SDK's server-side auth
 * (./oauth-mcp-server.ts: mcpAuthRouter and requireBearerAuth, HTTPS on 198.51.100.46), through
 * the platform: the start discovers the authorization server from the server's 401 challenge
 * (RFC 9728 → RFC 8414), registers the platform (RFC 7591) once for every user, and answers the
 * authorization URL (PKCE S256, the RFC 8707 resource, the scope from the metadata); the callback
 * with the browser's nonce cookie stores the tokens; an agent's tool call carries the user's
 * token; a token about to expire and a token the server refuses are refreshed; a user who has not
 * connected gets an error telling them to connect; each user has their own token; a user who may
 * not see the server cannot start; disconnect revokes.
 */
const ADDRESS = '198.51.100.46'
const tls = requireLocalTls(t, ADDRESS, ['mcp-oauth.test'])
const as = await startOAuthMcp(tls)
t.teardown(() => as.close())
const llm = await startFakeLlm()
t.teardown(() => llm.close())
const env = await startTestPlatform(t, { OUTBOUND_EXTRA_CA_FILE: tls.certFile })
const alice = await env.createUser('alice@test.local')
await env.sql(`insert into roles (name, permissions) values ('CrmUsers', $1)`, [
  JSON.stringify({
    'platform.agents/acme/helper.read:all': true,
    'platform.agents/acme/helper.chat:all': true,
    'platform.mcp-servers/acme/crm.read:all': true,
    'platform.mcp-servers/acme/crm.use:all': true,
  }),
])
const bob = await env.createUser('bob@test.local', ['Users', 'CrmUsers'])
const carol = await env.createUser('carol@test.local')
const WHOAMI = 'mcp__acme__crm__whoami'

/** What a browser does at the authorization server: follow the URL, get the redirect back. */
function authorize(url: string): Promise<URL> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca: tls.cert }, (res) => {
        res.resume()
        const loc = res.headers.location
        if (res.statusCode !== 302 || loc === undefined)
          reject(new Error(`authorize answered ${String(res.statusCode)}`))
        else resolve(new URL(loc))
      })
      .on('error', reject)
  })
}

async function start(token: string): Promise<{ url: URL; cookie: string; setCookie: string }> {
  const res = await env.request('POST', '/api/v1/mcp-servers/acme/crm/oauth/start', { token })
  if (res.status !== 200) throw new Error(`start: ${res.text}`)
  const setCookie = res.headers.get('set-cookie') ?? ''
  return {
    url: new URL((res.body as { authorization_url: string }).authorization_url),
    cookie: setCookie.split(';')[0] ?? '',
    setCookie,
  }
}

const back = (redirect: URL, cookie: string | null) =>
  env.request('GET', `/api/v1/oauth/mcp-servers/callback${redirect.search}`, {
    token: null,
    headers: cookie === null ? {} : { cookie },
  })

async function connect(token: string) {
  const flow = await start(token)
  const done = await back(await authorize(flow.url.toString()), flow.cookie)
  if (done.status !== 200) throw new Error(`callback: ${done.text}`)
  return done
}

type Message = { role: string; content: string; tool_call_id: string }
async function whoami(token: string, id: string) {
  const chat = await env.request('POST', '/agents/acme/helper/chats', { token, body: {} })
  if (chat.status !== 201) throw new Error(chat.text)
  const chatId = (chat.body as { id: string }).id
  const from = llm.requests.length
  llm.push({ tool_calls: [{ id, name: WHOAMI, arguments: {} }] }, { text: 'done' })
  const res = await env.request('POST', `/chats/${chatId}/messages`, { token, body: { content: 'who am I?' } })
  if (res.status !== 200) throw new Error(res.text)
  const full = (await env.request('GET', `/chats/${chatId}`, { token })).body as { messages: Message[] }
  const msg = full.messages.find((m) => m.role === 'tool' && m.tool_call_id === id)
  const sent = llm.requests.slice(from)[0]?.body as { tools?: { function: { name: string } }[] } | undefined
  return {
    result: JSON.parse(msg?.content ?? '{}') as Record<string, unknown>,
    offered: (sent?.tools ?? []).map((x) => x.function.name),
  }
}

t.before(async () => {
  const mk = (path: string, body: unknown, token = alice.token) => env.create(path, body, token)
  await env.create('/api/v1/llm-providers', llm.provider())
  await mk('/api/v1/mcp-servers', { namespace: 'acme', name: 'crm', url: as.url, auth: { type: 'oauth' } })
  await mk('/api/v1/agents', {
    namespace: 'acme',
    name: 'helper',
    system_prompt: 'You help.',
    enabled_mcp_servers: [{ server: 'acme/crm' }],
  })
})

t.test('the kind: oauth fields validated', async (t) => {
  const bad = await env.request('POST', '/api/v1/mcp-servers', {
    token: alice.token,
    body: { namespace: 'acme', name: 'bad', url: as.url, auth: { type: 'oauth', secret: 'acme/x' } },
  })
  t.match(bad, { status: 422, body: { errors: [{ path: 'auth.client_id' }] } }, 'a client secret needs a client id')
  const header = await env.request('POST', '/api/v1/mcp-servers', {
    token: alice.token,
    body: { namespace: 'acme', name: 'bad', url: as.url, auth: { type: 'none', scopes: ['a'] } },
  })
  t.match(header, { status: 422, body: { errors: [{ path: 'auth.type' }] } }, 'scopes only for oauth')
  const status = await env.request('GET', '/api/v1/mcp-servers/acme/crm/oauth/token', { token: alice.token })
  t.match(status, { status: 200, body: { connected: false } })
})

t.test(
  'discovery from the 401 challenge, registration, PKCE with the resource; the callback stores the token',
  async (t) => {
    const flow = await start(alice.token)
    t.match(
      flow.setCookie,
      /^platform_mcp_oauth_nonce=[A-Za-z0-9_-]{43}; Path=\/api\/v1\/oauth\/mcp-servers\/callback; Max-Age=600; HttpOnly; Secure; SameSite=Lax$/,
    )
    t.equal(`${flow.url.origin}${flow.url.pathname}`, `${as.base}/authorize`)
    const q = flow.url.searchParams
    t.equal(q.get('client_id'), 'client-1', 'the platform registered itself')
    t.equal(q.get('code_challenge_method'), 'S256')
    t.equal(q.get('resource'), as.url, 'RFC 8707 resource: the MCP server')
    t.equal(q.get('scope'), 'mcp:tools', "the scope from the server's challenge")
    t.match(q.get('redirect_uri'), /\/api\/v1\/oauth\/mcp-servers\/callback$/)
    t.same(
      as.requests.filter((r) => r.includes('well-known') || r.includes('register') || r === 'POST /mcp'),
      [
        'POST /mcp',
        'GET /.well-known/oauth-protected-resource/mcp',
        'GET /.well-known/oauth-authorization-server',
        'POST /register',
      ],
      'the probe answered 401 with resource_metadata, then RFC 9728, RFC 8414 and RFC 7591',
    )

    const redirect = await authorize(flow.url.toString())
    const stolen = await back(redirect, 'platform_mcp_oauth_nonce=someone-elses')
    t.match(stolen, { status: 403, body: { code: 'oauth.browser_mismatch' } }, 'another browser cannot finish it')
    const again = await start(alice.token)
    const done = await back(await authorize(again.url.toString()), again.cookie)
    t.equal(done.status, 200, done.text)
    t.match(done.body, { status: 'connected', mcp_server: { namespace: 'acme', name: 'crm' }, scope: 'mcp:tools' })
    t.match(done.headers.get('set-cookie') ?? '', /^platform_mcp_oauth_nonce=; .*Max-Age=0/)
    t.same(as.grants, ['authorization_code'], 'the code exchanged (the SDK checked the PKCE verifier)')
    t.equal(as.registrations, 1, 'registered once')
    const rows = await env.sql('select access_token from connector_oauth_tokens')
    t.equal(rows.length, 1)
    t.notOk(String(rows[0]?.['access_token']).startsWith('at-'), 'stored encrypted')
    const status = await env.request('GET', '/api/v1/mcp-servers/acme/crm/oauth/token', { token: alice.token })
    t.match(status.body, { connected: true, has_refresh_token: true, scope: 'mcp:tools' })
  },
)

t.test("the agent's tool call carries the user's token", async (t) => {
  const { result, offered } = await whoami(alice.token, 'w1')
  t.same(offered, [WHOAMI], "listed with alice's token")
  t.same(result, { result: 'subject-2 mcp:tools' })
})

t.test('a token about to expire is refreshed before use; a token the server refuses is refreshed once', async (t) => {
  await env.sql("update connector_oauth_tokens set expires_at = now() + interval '5 seconds'")
  t.same((await whoami(alice.token, 'w2')).result, { result: 'subject-2 mcp:tools' })
  t.same(as.grants, ['authorization_code', 'refresh_token'], 'refreshed (with the resource)')
  as.expireAccessTokens()
  t.same((await whoami(alice.token, 'w3')).result, { result: 'subject-2 mcp:tools' })
  t.same(as.grants, ['authorization_code', 'refresh_token', 'refresh_token'], 'refused, refreshed, called again')
  t.ok(
    as.resources.every((r) => r === as.url),
    'every authorization and token request named the resource',
  )
})

t.test('a user who has not connected is told to connect; then gets their own token', async (t) => {
  const { result } = await whoami(bob.token, 'b1')
  t.match(result, {
    code: 'mcp_server.oauth_not_connected',
    error: /connect your account first: POST \/api\/v1\/mcp-servers\/acme\/crm\/oauth\/start/,
  })
  await connect(bob.token)
  t.equal(as.registrations, 1, 'the registered client is reused')
  t.same((await whoami(bob.token, 'b2')).result, { result: 'subject-3 mcp:tools' }, "bob's own subject")
  t.same((await whoami(alice.token, 'w4')).result, { result: 'subject-2 mcp:tools' }, "alice's is unchanged")
})

t.test('access: a user who may not see the server cannot connect to it', async (t) => {
  const res = await env.request('POST', '/api/v1/mcp-servers/acme/crm/oauth/start', { token: carol.token })
  t.equal(res.status, 404, res.text)
  const status = await env.request('GET', '/api/v1/mcp-servers/acme/crm/oauth/token', { token: carol.token })
  t.equal(status.status, 404)
})

t.test('disconnect deletes and revokes the caller’s tokens only', async (t) => {
  const res = await env.request('DELETE', '/api/v1/mcp-servers/acme/crm/oauth/token', { token: bob.token })
  t.equal(res.status, 204, res.text)
  t.equal(res.headers.get('x-oauth-revoked'), 'true')
  t.equal(as.revoked.size, 2, 'refresh and access token revoked')
  t.match((await whoami(bob.token, 'b3')).result, { code: 'mcp_server.oauth_not_connected' })
  t.same((await whoami(alice.token, 'w5')).result, { result: 'subject-2 mcp:tools' })
  const none = await env.request('DELETE', '/api/v1/mcp-servers/acme/crm/oauth/token', { token: bob.token })
  t.match(none, { status: 404, body: { code: 'mcp_server.oauth_not_found' } })
})

t.test("a new URL drops the server's OAuth client and every user's tokens", async (t) => {
  const moved = await env.request('PUT', '/api/v1/mcp-servers/acme/crm', {
    token: alice.token,
    body: { url: `${as.url}?v=2`, auth: { type: 'oauth' } },
  })
  t.equal(moved.status, 200, moved.text)
  const status = await env.request('GET', '/api/v1/mcp-servers/acme/crm/oauth/token', { token: alice.token })
  t.match(status.body, { connected: false }, 'the old token is not sent to the new URL')
  await connect(alice.token)
  t.equal(as.registrations, 2, 'discovered and registered again')
  t.equal((await env.sql('select 1 from connector_oauth_tokens')).length, 1, "only alice's new token is left")
  const again = await whoami(alice.token, 'w6')
  t.same(again.offered, [WHOAMI])
  t.same(again.result, { result: 'subject-4 mcp:tools' })
})

t.test('without a challenge, the protected-resource metadata is found at the well-known URI', async (t) => {
  const mk = await env.request('POST', '/api/v1/mcp-servers', {
    token: alice.token,
    body: { namespace: 'acme', name: 'quiet', url: as.quietUrl, auth: { type: 'oauth', scopes: ['mcp:tools'] } },
  })
  t.equal(mk.status, 201, mk.text)
  const from = as.requests.length
  const res = await env.request('POST', '/api/v1/mcp-servers/acme/quiet/oauth/start', { token: alice.token })
  t.equal(res.status, 200, res.text)
  t.same(
    as.requests.slice(from),
    [
      'POST /mcp-quiet',
      'GET /.well-known/oauth-protected-resource/mcp-quiet',
      'GET /.well-known/oauth-authorization-server',
      'POST /register',
    ],
    'a 401 without resource_metadata: the well-known URI with the path',
  )
  const url = new URL((res.body as { authorization_url: string }).authorization_url)
  t.equal(url.searchParams.get('resource'), as.quietUrl)
  t.equal(url.searchParams.get('scope'), 'mcp:tools', "the server's own scopes")
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const done = await back(await authorize(url.toString()), cookie)
  t.match(done, { status: 200, body: { mcp_server: { name: 'quiet' } } })
})

t.test("deleting a server revokes every user's tokens for it", async (t) => {
  const before = as.revoked.size
  const id = (await env.sql("select id from resources where kind = 'mcp_server' and name = 'quiet'"))[0]?.['id']
  const res = await env.request('DELETE', '/api/v1/mcp-servers/acme/quiet', { token: alice.token })
  t.equal(res.status, 204, res.text)
  t.equal(as.revoked.size, before + 2, 'refresh and access token revoked')
  t.equal((await env.sql('select 1 from connector_oauth_tokens where connector_id = $1', [id])).length, 0)
  t.equal((await env.sql('select 1 from mcp_server_oauth_clients where server_id = $1', [id])).length, 0)
})
