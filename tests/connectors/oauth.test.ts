import https from 'node:https'
import t from 'tap'
import { createSecretBox } from '../../src/kernel/crypto.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { connectorKind } from '../../src/kinds/connector/kind.ts'
import type { ConnectorDeps, ConnectorRecord } from '../../src/connectors/deps.ts'
import { finishFlow, startFlow } from '../../src/connectors/oauth.ts'
import { ENCRYPTION_KEY, startTestPlatform } from '../helpers/env.ts'
import { requireLocalTls } from '../helpers/local-https.ts'
import { startOAuthServer } from './oauth-server.ts'

/*
 * Connector OAuth 2 against a real authorization server (./oauth-server.ts, HTTPS on
 * 198.51.100.22): start → provider → callback with the state bound to the starting browser by the
 * HttpOnly nonce cookie, PKCE S256, tokens encrypted per user, refreshed when they expire, revoked
 * when the user disconnects and (every user's) when the connector is deleted; and the callbacks that must fail (foreign state, another browser's
 * cookie, no cookie, reuse, expiry), and user B on A's connector.
 */
const ADDRESS = '198.51.100.22'
const tls = requireLocalTls(t, ADDRESS, ['oauth.test'])
const provider = await startOAuthServer(t, tls, { id: 'platform-client', secret: 'cs-1' })
const env = await startTestPlatform(t, { ROLES: 'gateway,resources', OUTBOUND_EXTRA_CA_FILE: tls.certFile })
const alice = await env.createUser('alice@test.local')
const bob = await env.createUser('bob@test.local')
const callback = `${env.base}/api/v1/oauth/callback`

/** What a browser does at the provider: follow the authorization URL, get the redirect back. */
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

async function start(
  token: string,
  conn = 'acme/crm',
): Promise<{ url: string; state: string; cookie: string; setCookie: string }> {
  const res = await env.request('POST', `/api/v1/connectors/${conn}/oauth/start`, { token })
  if (res.status !== 200) throw new Error(`start: ${res.text}`)
  const setCookie = res.headers.get('set-cookie') ?? ''
  const cookie = setCookie.split(';')[0] ?? ''
  const body = res.body as { authorization_url: string; state: string }
  return { url: body.authorization_url, state: body.state, cookie, setCookie }
}

const back = (redirect: URL, cookie: string | null) =>
  env.request('GET', `/api/v1/oauth/callback${redirect.search}`, {
    token: null,
    headers: cookie === null ? {} : { cookie },
  })

t.before(async () => {
  const mk = (path: string, body: unknown) => env.create(path, body, alice.token)
  await mk('/api/v1/secrets', { namespace: 'acme', name: 'crm-client', value: 'cs-1' })
  await mk('/api/v1/connectors', {
    namespace: 'acme',
    name: 'crm',
    base_url: provider.url,
    auth: {
      type: 'oauth2',
      secret: 'acme/crm-client',
      oauth2: {
        authorization_url: `${provider.url}/authorize`,
        token_url: `${provider.url}/token`,
        revocation_url: `${provider.url}/revoke`,
        client_id: 'platform-client',
        scopes: ['read', 'write'],
        redirect_uri: callback,
      },
    },
    operations: [{ name: 'me', method: 'GET', path: '/api/me' }],
  })
})

t.test('the code flow: start, provider, callback; PKCE; tokens encrypted; refresh; revoke on disconnect', async (t) => {
  const before = await env.request('POST', '/api/v1/connectors/acme/crm/operations/me/execute', {
    token: alice.token,
    body: { input: {} },
  })
  t.match(before, { status: 409, body: { code: 'connector.oauth_not_connected' } }, 'no token yet')

  const flow = await start(alice.token)
  t.match(
    flow.setCookie,
    /^platform_oauth_nonce=[A-Za-z0-9_-]{43}; Path=\/api\/v1\/oauth\/callback; Max-Age=600; HttpOnly; Secure; SameSite=Lax$/,
    'an HttpOnly nonce cookie for the callback path',
  )
  const auth = new URL(flow.url)
  t.equal(auth.searchParams.get('code_challenge_method'), 'S256')
  t.equal(auth.searchParams.get('redirect_uri'), callback)
  t.equal(auth.searchParams.get('scope'), 'read write')
  t.equal(auth.searchParams.get('state'), flow.state)

  provider.codeTokenSeconds = 10 // inside the 30 s refresh margin: the first call refreshes
  const redirect = await authorize(flow.url)
  const done = await back(redirect, flow.cookie)
  t.equal(done.status, 200, done.text)
  t.match(done.body, { status: 'connected', connector: { namespace: 'acme', name: 'crm' }, scope: 'read write' })
  t.match(done.headers.get('set-cookie') ?? '', /^platform_oauth_nonce=; .*Max-Age=0/, 'the nonce cookie is cleared')
  t.same(
    provider.grants,
    ['authorization_code'],
    'the code was exchanged (the provider checked the PKCE verifier against the challenge)',
  )

  const rows = await env.sql<{ access_token: string; refresh_token: string }>(
    'select access_token, refresh_token from connector_oauth_tokens',
  )
  t.equal(rows.length, 1)
  t.notMatch(JSON.stringify(rows), /at-|rt-/, 'tokens are encrypted at rest')

  const status = await env.request('GET', '/api/v1/connectors/acme/crm/oauth/token', { token: alice.token })
  t.match(status.body, { connected: true, has_refresh_token: true, scope: 'read write' })
  t.notMatch(status.text, /at-|rt-/, 'the status never shows a token')

  const first = await env.request('POST', '/api/v1/connectors/acme/crm/operations/me/execute', {
    token: alice.token,
    body: { input: {} },
  })
  t.match(first.body, { status: 200, body: { subject: 'alice-at-provider' } }, first.text)
  t.same(provider.grants, ['authorization_code', 'refresh_token'], 'a token about to expire is refreshed before use')
  const second = await env.request('POST', '/api/v1/connectors/acme/crm/operations/me/execute', {
    token: alice.token,
    body: { input: {} },
  })
  t.match(second.body, { status: 200 })
  t.equal(provider.grants.length, 2, 'a fresh token is used as it is')

  const bobsCall = await env.request('POST', '/api/v1/connectors/acme/crm/operations/me/execute', {
    token: bob.token,
    body: { input: {} },
  })
  t.equal(bobsCall.status, 404, "B cannot use A's connector (nor A's token)")

  const revokedBefore = provider.revoked.size
  const del = await env.request('DELETE', '/api/v1/connectors/acme/crm/oauth/token', { token: alice.token })
  t.equal(del.status, 204)
  t.equal(del.headers.get('x-oauth-revoked'), 'true')
  t.equal(provider.revoked.size, revokedBefore + 2, 'refresh and access token revoked at the provider')
  t.equal((await env.sql('select 1 from connector_oauth_tokens')).length, 0, 'and deleted here')
  t.match(
    await env.request('POST', '/api/v1/connectors/acme/crm/operations/me/execute', {
      token: alice.token,
      body: { input: {} },
    }),
    { status: 409, body: { code: 'connector.oauth_not_connected' } },
  )
  t.match(await env.request('DELETE', '/api/v1/connectors/acme/crm/oauth/token', { token: alice.token }), {
    status: 404,
  })
})

t.test('callbacks that must fail', async (t) => {
  const grants = provider.grants.length
  t.match(
    await back(new URL(`${callback}?state=forged-state&code=x`), null),
    { status: 400, body: { code: 'oauth.invalid_state' } },
    'a state the platform never issued',
  )

  const alices = await start(alice.token)
  const bobs = await start(alice.token) // a second browser of alice's (its own cookie)
  const redirect = await authorize(alices.url)
  t.match(
    await back(redirect, bobs.cookie),
    { status: 403, body: { code: 'oauth.browser_mismatch' } },
    "another browser's cookie",
  )
  t.match(
    await back(redirect, null),
    { status: 403, body: { code: 'oauth.browser_mismatch' } },
    'no cookie (a link sent to a victim: account-linking CSRF)',
  )
  t.match(
    await back(redirect, 'platform_oauth_nonce=guess'),
    { status: 403, body: { code: 'oauth.browser_mismatch' } },
    'a guessed cookie',
  )
  t.equal(provider.grants.length, grants, 'no code was exchanged for a refused callback')
  const ok = await back(redirect, alices.cookie)
  t.equal(ok.status, 200, 'the starting browser still completes its flow after the failed attempts')
  t.match(
    await back(redirect, alices.cookie),
    { status: 400, body: { code: 'oauth.invalid_state' } },
    'a state is single-use',
  )

  const late = await start(alice.token)
  await env.sql("update connector_oauth_flows set expires_at = now() - interval '1 second' where state = $1", [
    late.state,
  ])
  t.match(
    await back(await authorize(late.url), late.cookie),
    { status: 400, body: { code: 'oauth.invalid_state' } },
    'an expired flow',
  )

  const denied = await start(alice.token)
  t.match(
    await back(new URL(`${callback}?state=${denied.state}&error=access_denied`), denied.cookie),
    { status: 400, body: { code: 'oauth.denied' } },
    'the user said no at the provider',
  )

  t.match(
    await env.request('POST', '/api/v1/connectors/acme/crm/oauth/start', { token: bob.token }),
    { status: 404 },
    "B cannot start a flow on A's connector",
  )
})

t.test(
  "a token endpoint whose host does not resolve: 502 upstream.dns_failed naming the host, not the database's 503",
  async (t) => {
    const made = await env.request('POST', '/api/v1/connectors', {
      token: alice.token,
      body: {
        namespace: 'acme',
        name: 'lost',
        base_url: provider.url,
        auth: {
          type: 'oauth2',
          secret: 'acme/crm-client',
          oauth2: {
            authorization_url: `${provider.url}/authorize`,
            token_url: 'https://token.nowhere.invalid/token',
            client_id: 'platform-client',
            scopes: ['read'],
            redirect_uri: callback,
          },
        },
        operations: [{ name: 'me', method: 'GET', path: '/api/me' }],
      },
    })
    t.equal(made.status, 201, made.text)
    const flow = await start(alice.token, 'acme/lost')
    const res = await back(await authorize(flow.url), flow.cookie)
    t.match(res, { status: 502, body: { code: 'upstream.dns_failed' } }, res.text)
    t.match((res.body as { detail: string }).detail, /token\.nowhere\.invalid/, 'the answer names the host')
  },
)

t.test('OAUTH_BIND_BROWSER_SESSION=false: no cookie is set or needed (the state alone binds the flow)', async (t) => {
  const { db, resources } = env.platform
  if (db === undefined || resources === undefined) throw new Error('no service role')
  const d: ConnectorDeps = {
    db,
    resources,
    config: { ...env.config, OAUTH_BIND_BROWSER_SESSION: false },
    box: createSecretBox(ENCRYPTION_KEY),
    log: createLogger({ level: 'silent' }),
  }
  const [conn] = (await resources.loadMany(connectorKind, ['acme/crm'])) as ConnectorRecord[]
  if (conn === undefined) throw new Error('no connector')
  const flow = await startFlow(d, alice.id, conn)
  t.equal(flow.cookie, undefined, 'no nonce cookie')
  const redirect = await authorize(flow.authorization_url)
  const done = await finishFlow(
    d,
    { state: redirect.searchParams.get('state') ?? '', code: redirect.searchParams.get('code') ?? '' },
    undefined,
  )
  t.equal(done.connector.name, 'crm', 'the callback completes without a cookie')
  await t.rejects(
    finishFlow(d, { state: flow.state, code: 'x' }, undefined),
    { code: 'oauth.invalid_state' },
    'still single-use',
  )
})

t.test("deleting a connector revokes every user's tokens at the provider and removes them", async (t) => {
  provider.codeTokenSeconds = 3600
  const { db, resources } = env.platform
  if (db === undefined || resources === undefined) throw new Error('no service role')
  const made = await env.request('POST', '/api/v1/connectors', {
    token: alice.token,
    body: {
      namespace: 'acme',
      name: 'crm-gone',
      base_url: provider.url,
      auth: {
        type: 'oauth2',
        secret: 'acme/crm-client',
        oauth2: {
          authorization_url: `${provider.url}/authorize`,
          token_url: `${provider.url}/token`,
          revocation_url: `${provider.url}/revoke`,
          client_id: 'platform-client',
          redirect_uri: callback,
        },
      },
      operations: [{ name: 'me', method: 'GET', path: '/api/me' }],
    },
  })
  t.equal(made.status, 201, made.text)
  const id = (made.body as { id: string }).id

  // alice through the browser flow; bob's tokens stored the same way below the routes (he may not see alice's connector)
  const flow = await start(alice.token, 'acme/crm-gone')
  t.equal((await back(await authorize(flow.url), flow.cookie)).status, 200)
  const d: ConnectorDeps = {
    db,
    resources,
    config: { ...env.config, OAUTH_BIND_BROWSER_SESSION: false },
    box: createSecretBox(ENCRYPTION_KEY),
    log: createLogger({ level: 'silent' }),
  }
  const [conn] = (await resources.loadMany(connectorKind, ['acme/crm-gone'])) as ConnectorRecord[]
  if (conn === undefined) throw new Error('no connector')
  const bobs = await authorize((await startFlow(d, bob.id, conn)).authorization_url)
  await finishFlow(
    d,
    { state: bobs.searchParams.get('state') ?? '', code: bobs.searchParams.get('code') ?? '' },
    undefined,
  )
  t.equal(
    (await env.sql('select 1 from connector_oauth_tokens where connector_id = $1', [id])).length,
    2,
    'two users connected',
  )

  const call = await env.request('POST', '/api/v1/connectors/acme/crm-gone/operations/me/execute', {
    token: alice.token,
    body: { input: {} },
  })
  const suffix = (call.body as { body: { token_suffix: string } }).body.token_suffix
  t.equal(suffix.length, 4, call.text)
  const pending = await start(alice.token, 'acme/crm-gone')

  const revokedBefore = new Set(provider.revoked)
  const del = await env.request('DELETE', '/api/v1/connectors/acme/crm-gone', { token: alice.token })
  t.equal(del.status, 204, del.text)
  const fresh = [...provider.revoked].filter((x) => !revokedBefore.has(x))
  t.equal(fresh.length, 4, "both users' refresh and access tokens were revoked at the provider")
  t.ok(
    fresh.some((x) => x.startsWith('at-') && x.endsWith(suffix)),
    "including the access token alice's call used",
  )
  t.equal(fresh.filter((x) => x.startsWith('rt-')).length, 2, 'and both refresh tokens')
  t.equal(
    (await env.sql('select 1 from connector_oauth_tokens where connector_id = $1', [id])).length,
    0,
    'and removed here',
  )
  t.equal(
    (await env.sql('select 1 from connector_oauth_flows where state = $1', [pending.state])).length,
    0,
    'a flow still open for it is gone too',
  )
  t.equal(
    (await env.request('GET', '/api/v1/connectors/acme/crm-gone', { token: alice.token })).status,
    404,
    'the connector is deleted',
  )
})
