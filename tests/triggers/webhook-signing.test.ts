import t from 'tap'
import { signWebhook } from '../../src/webhooks/signature.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Signed webhooks (replay protection): a webhook with a `signing_secret` (stored encrypted, never
 * returned) accepts only calls carrying X-Webhook-Timestamp and X-Webhook-Signature =
 * sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>"> (the raw query string for GET), with the
 * timestamp within WEBHOOK_SIGNATURE_TOLERANCE_SECONDS (300) of the server clock. Good, missing,
 * bad, tampered, stale and future calls, a good call replayed until it falls out of the window, a
 * GET over its query string, and removing the secret.
 */
let env: TestPlatform
let a: { id: string; token: string }
const SECRET = 'whsec_test_0123456789abcdef'
const ECHO = 'def handler(input, context):\n    return {"input": input, "user": context["user_email"]}\n'
const now = () => Math.floor(Date.now() / 1000)

t.before(async () => {
  env = await startTestPlatform(t)
  a = await env.createUser('signed-a@test.local')
  const r = await env.request('POST', '/api/v1/functions', {
    token: a.token,
    body: { namespace: 'signed', name: 'echo', code: ECHO },
  })
  if (r.status !== 201) throw new Error(r.text)
})

const post = (path: string, raw: string, headers: Record<string, string> = {}) =>
  env.request('POST', `/webhooks/${path}`, {
    token: null,
    rawBody: raw,
    headers: { 'content-type': 'application/json', ...headers },
  })
const signed = (secret: string, ts: number, payload: string) => ({
  'x-webhook-timestamp': String(ts),
  'x-webhook-signature': signWebhook(secret, String(ts), payload),
})
const code = (r: { body: unknown }) => (r.body as { code?: string }).code

t.test('POST: the secret is write-only and encrypted; good calls run, missing/bad/tampered are 401', async (t) => {
  const res = await env.request('POST', '/api/v1/webhooks', {
    token: a.token,
    body: {
      path: 'signed/push',
      requires_auth: false,
      function_namespace: 'signed',
      function_name: 'echo',
      signing_secret: SECRET,
    },
  })
  t.equal(res.status, 201, res.text)
  t.match(res.body, { has_signing_secret: true })
  t.notOk(res.text.includes(SECRET), 'the secret is not returned')
  t.notOk((await env.request('GET', '/api/v1/webhooks/signed/push', { token: a.token })).text.includes(SECRET))
  const [stored] = await env.sql<{ signing_secret: string }>(
    "select signing_secret from webhooks where path = 'signed/push'",
  )
  t.match(stored?.signing_secret, /^v1:/, 'stored as a secret-box ciphertext')
  t.notOk(stored?.signing_secret.includes(SECRET))

  const body = '{"n": 7,  "event":"push"}'
  const good = await post('signed/push', body, signed(SECRET, now(), body))
  t.equal(good.status, 200, good.text)
  t.same(
    good.body,
    { input: { n: 7, event: 'push' }, user: 'signed-a@test.local' },
    'the raw body (spacing as sent) is the input',
  )

  const missing = await post('signed/push', body)
  t.equal(missing.status, 401)
  t.equal(code(missing), 'webhook.signature_invalid')
  t.match(
    (missing.body as { detail: string }).detail,
    /X-Webhook-Timestamp|x-webhook-timestamp/i,
    'says what is needed',
  )
  const onlyTs = await post('signed/push', body, { 'x-webhook-timestamp': String(now()) })
  t.equal(onlyTs.status, 401, 'a timestamp without a signature')

  const wrongKey = await post('signed/push', body, signed('another-secret-0123456789', now(), body))
  t.equal(wrongKey.status, 401)
  t.equal(code(wrongKey), 'webhook.signature_invalid')
  const ts = now()
  const tampered = await post('signed/push', '{"n": 8,  "event":"push"}', signed(SECRET, ts, body))
  t.equal(tampered.status, 401, 'a body changed after signing')
  const otherTs = await post('signed/push', body, {
    'x-webhook-timestamp': String(ts + 1),
    'x-webhook-signature': signWebhook(SECRET, String(ts), body),
  })
  t.equal(otherTs.status, 401, 'a timestamp changed after signing')
  const garbage = await post('signed/push', body, {
    'x-webhook-timestamp': String(ts),
    'x-webhook-signature': 'sha256=zz',
  })
  t.equal(garbage.status, 401, 'not a hex digest')
  const short = await post('signed/push', body, {
    'x-webhook-timestamp': String(ts),
    'x-webhook-signature': signWebhook(SECRET, String(ts), body).slice(0, 40),
  })
  t.equal(short.status, 401, 'a truncated digest')
  const badTs = await post('signed/push', body, {
    'x-webhook-timestamp': 'yesterday',
    'x-webhook-signature': signWebhook(SECRET, 'yesterday', body),
  })
  t.equal(badTs.status, 401, 'a timestamp that is not Unix seconds')
})

t.test(
  'stale and future timestamps are 401 webhook.signature_expired; a replay is refused once outside the window',
  async (t) => {
    const body = '{"event":"late"}'
    const stale = await post('signed/push', body, signed(SECRET, now() - 301, body))
    t.equal(stale.status, 401)
    t.equal(code(stale), 'webhook.signature_expired')
    const future = await post('signed/push', body, signed(SECRET, now() + 301, body))
    t.equal(future.status, 401)
    t.equal(code(future), 'webhook.signature_expired')

    // a good call captured 298 s after it was signed (inside the window), replayed as it was: it stops working when it leaves the window
    const captured = signed(SECRET, now() - 298, body)
    t.equal((await post('signed/push', body, captured)).status, 200, 'accepted inside the window')
    const replay = await eventually(
      async () => {
        const r = await post('signed/push', body, captured)
        return r.status === 200 ? undefined : r
      },
      'the replayed call to leave the window',
      10_000,
      250,
    )
    t.equal(replay.status, 401)
    t.equal(code(replay), 'webhook.signature_expired', 'replayed outside the window')
  },
)

t.test('GET: the signature covers the raw query string', async (t) => {
  const res = await env.request('POST', '/api/v1/webhooks', {
    token: a.token,
    body: {
      path: 'signed/get',
      http_method: 'GET',
      requires_auth: false,
      function_namespace: 'signed',
      function_name: 'echo',
      signing_secret: SECRET,
    },
  })
  t.equal(res.status, 201, res.text)
  const query = 'x=1&y=two'
  const good = await env.request('GET', `/webhooks/signed/get?${query}`, {
    token: null,
    headers: signed(SECRET, now(), query),
  })
  t.equal(good.status, 200, good.text)
  t.same((good.body as { input: unknown }).input, { x: '1', y: 'two' })
  const tampered = await env.request('GET', '/webhooks/signed/get?x=2&y=two', {
    token: null,
    headers: signed(SECRET, now(), query),
  })
  t.equal(tampered.status, 401, 'another query string')
  t.equal((await env.request('GET', `/webhooks/signed/get?${query}`, { token: null })).status, 401, 'unsigned')
})

t.test('the secret is replaced and removed with PATCH', async (t) => {
  const body = '{"event":"rotate"}'
  const NEW = 'whsec_rotated_9876543210fedcba'
  const patched = await env.request('PATCH', '/api/v1/webhooks/signed/push', {
    token: a.token,
    body: { signing_secret: NEW },
  })
  t.equal(patched.status, 200, patched.text)
  t.match(patched.body, { has_signing_secret: true })
  t.equal((await post('signed/push', body, signed(SECRET, now(), body))).status, 401, 'the old secret no longer signs')
  t.equal((await post('signed/push', body, signed(NEW, now(), body))).status, 200, 'the new one does')
  t.equal(
    (await env.request('PATCH', '/api/v1/webhooks/signed/push', { token: a.token, body: { description: 'kept' } }))
      .status,
    200,
  )
  t.equal(
    (await post('signed/push', body, signed(NEW, now(), body))).status,
    200,
    'a change of other fields keeps the secret',
  )
  const removed = await env.request('PATCH', '/api/v1/webhooks/signed/push', {
    token: a.token,
    body: { signing_secret: null },
  })
  t.match(removed.body, { has_signing_secret: false })
  // the gateways' copy of the entry follows the change by a KV watch
  const plain = await eventually(async () => {
    const r = await post('signed/push', body)
    return r.status === 200 ? r : undefined
  }, 'unsigned calls to be accepted after the secret is removed')
  t.same((plain.body as { input: unknown }).input, { event: 'rotate' })
  t.equal(
    (await env.request('PATCH', '/api/v1/webhooks/signed/push', { token: a.token, body: { signing_secret: 'short' } }))
      .status,
    422,
    'a secret under 16 characters',
  )
})
