import t from 'tap'
import { issueExecutionToken } from '../../src/auth/tokens.ts'
import { SECRET_KEY, startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * The token a function receives (context.access_token) is an execution token: capped lifetime
 * whatever the function's own timeout, the caller's permissions cut down to the execution scope
 * (no users, roles, API keys, token exchange, queue or system admin), and refused from the request
 * after its execution stops running. And a function's own `timeout` never exceeds FUNCTION_TIMEOUT.
 *
 * "Works while running": a sandbox has no network, so a running function cannot hand its token
 * out. The test mints a token for a real running execution with the same function the executor
 * uses (issueExecutionToken) and the same claims, and the first test checks that the token the
 * executor really handed out carries exactly those claims.
 */
let env: TestPlatform
let user: { id: string; token: string }

const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>
const sleepy = (seconds: number) =>
  `import time\ndef handler(input, context):\n    time.sleep(${String(seconds)})\n    return {"slept": ${String(seconds)}}\n`

t.before(async () => {
  // FUNCTION_TIMEOUT 3 s: a function saving 86,400 s must still be stopped after 3 s; the token
  // cap of 1 min is below what the time limit alone would give (2 min), so the cap is what shows
  env = await startTestPlatform(t, { FUNCTION_TIMEOUT: '3', FUNCTION_TOKEN_MAX_MINUTES: '1' })
  user = await env.createUser('tokens@test.local')
  const save = async (token: string, body: Record<string, unknown>) => {
    const res = await env.request('POST', '/api/v1/functions', {
      token,
      body: { input_schema: { type: 'object' }, output_schema: {}, ...body },
    })
    if (res.status !== 201) throw new Error(res.text)
  }
  await save(user.token, {
    namespace: 'tokens',
    name: 'leak',
    timeout: 86_400,
    code: 'def handler(input, context):\n    return {"token": context["access_token"]}\n',
  })
  await save(user.token, { namespace: 'tokens', name: 'long', timeout: 86_400, code: sleepy(30) })
  await save(env.adminToken, { namespace: 'admin-tools', name: 'long', code: sleepy(30) })
})

t.test('the token handed to a function: capped lifetime, bound to the execution, dead once it ended', async (t) => {
  const res = await env.request('POST', '/functions/tokens/leak/execute', { token: user.token, body: { input: {} } })
  const body = res.body as { status: string; execution_id: string; result: { token: string } }
  t.equal(body.status, 'success', res.text)
  const token = body.result.token
  const claims = claimsOf(token)
  t.match(claims, {
    sub: user.id,
    email: 'tokens@test.local',
    type: 'access',
    scope: 'execution',
    exe: body.execution_id,
    att: 1,
  })
  const lifetime = (claims['exp'] as number) - (claims['iat'] as number)
  t.equal(
    lifetime,
    60,
    "FUNCTION_TOKEN_MAX_MINUTES (1) bounds the lifetime, whatever the function's timeout (86,400 s)",
  )
  // the synchronous call answered: the execution has ended, so its token is refused
  const after = await env.request('GET', '/auth/me', { token })
  t.equal(after.status, 401)
  t.match(after.body, { code: 'auth.execution_ended' })
  t.equal((await env.request('GET', '/api/v1/functions/tokens/leak', { token })).status, 401, 'on every route')
})

t.test("a function's own timeout is clamped to FUNCTION_TIMEOUT", async (t) => {
  const res = await env.request('POST', '/functions/tokens/long/execute', { token: user.token, body: { input: {} } })
  const body = res.body as { status: string; error: string }
  t.equal(body.status, 'timeout', `a 30 s sleep with timeout 86,400 is stopped by FUNCTION_TIMEOUT=3: ${res.text}`)
})

async function runningExecution(token: string, path: string): Promise<string> {
  const res = await env.request('POST', `${path}/execute/async`, { token, body: { input: {} } })
  if (res.status !== 202) throw new Error(res.text)
  const id = (res.body as { execution_id: string }).execution_id
  await eventually(
    async () =>
      ((await env.request('GET', `/executions/${id}`, { token })).body as { status: string }).status === 'running' ||
      undefined,
    'the execution to run',
  )
  return id
}

t.test(
  'while its execution runs the token works within the execution scope; cancelling revokes it at once',
  async (t) => {
    const id = await runningExecution(user.token, '/functions/tokens/long')
    const token = await issueExecutionToken(
      SECRET_KEY,
      { sub: user.id, email: 'tokens@test.local', executionId: id, attempt: 1 },
      5,
    )
    const me = await env.request('GET', '/auth/me', { token })
    t.equal(me.status, 200, me.text)
    t.match(me.body, { id: user.id })
    t.equal(
      (await env.request('GET', '/api/v1/functions/tokens/leak', { token })).status,
      200,
      'reads its caller’s functions',
    )

    const key = await env.request('POST', '/api/v1/api-keys', {
      token,
      body: { name: 'stolen', permissions: { 'platform.functions/*/*.read:own': true } },
    })
    t.equal(key.status, 403, 'cannot mint an API key')
    t.match(key.body, { code: 'auth.execution_token' })
    t.equal((await env.request('GET', '/api/v1/users', { token })).status, 403, 'cannot call /api/v1/users')
    t.equal(
      (await env.request('GET', `/api/v1/users/${user.id}`, { token })).status,
      403,
      'not even its own user record',
    )
    const exchange = await env.request('POST', '/auth/token/exchange', {
      token,
      body: { provider: 'x', subject: 'y', email: 'tokens@test.local' },
    })
    t.equal(exchange.status, 403, 'cannot exchange')
    const check = await env.request('POST', '/auth/check-permissions', {
      token,
      body: { permissions: ['platform.functions/tokens/leak.execute:own', 'platform.secrets/tokens/s.read:own'] },
    })
    t.match(
      check.body,
      { checks: [{ has_permission: true }, { has_permission: false }] },
      'secrets are outside the execution scope',
    )

    const otherAttempt = await issueExecutionToken(
      SECRET_KEY,
      { sub: user.id, email: 'tokens@test.local', executionId: id, attempt: 2 },
      5,
    )
    t.equal(
      (await env.request('GET', '/auth/me', { token: otherAttempt })).status,
      401,
      'another attempt of the same job',
    )
    const other = await env.createUser('other@test.local')
    const otherUser = await issueExecutionToken(
      SECRET_KEY,
      { sub: other.id, email: 'other@test.local', executionId: id, attempt: 1 },
      5,
    )
    t.equal(
      (await env.request('GET', '/auth/me', { token: otherUser })).status,
      401,
      'another user on the same execution',
    )

    const cancel = await env.request('POST', `/api/v1/queue/jobs/${id}/cancel`)
    t.equal(cancel.status, 200, cancel.text)
    const after = await env.request('GET', '/auth/me', { token })
    t.equal(after.status, 401, 'refused on the very next request')
    t.match(after.body, { code: 'auth.execution_ended' })
  },
)

t.test("an admin's execution token is no admin token", async (t) => {
  const id = await runningExecution(env.adminToken, '/functions/admin-tools/long')
  const token = await issueExecutionToken(
    SECRET_KEY,
    { sub: env.adminId, email: 'admin@test.local', executionId: id, attempt: 1 },
    5,
  )
  t.equal(
    (await env.request('GET', '/api/v1/functions/tokens/leak', { token })).status,
    200,
    "it may still read every function (the admin's grant within the scope)",
  )
  const create = await env.request('POST', '/api/v1/users', {
    token,
    body: { email: 'planted@test.local', roles: ['Admins'] },
  })
  t.equal(create.status, 403, 'cannot create users')
  t.equal((await env.request('GET', '/api/v1/queue/stats', { token })).status, 403, 'no queue administration')
  t.equal((await env.request('GET', '/api/v1/roles', { token })).status, 403, 'no roles')
  const exchange = await env.request('POST', '/auth/token/exchange', {
    token,
    body: { provider: 'x', subject: 'y', email: 'tokens@test.local' },
  })
  t.equal(exchange.status, 403, 'no token exchange')
  t.equal((await env.request('POST', `/api/v1/queue/jobs/${id}/cancel`)).status, 200)
})
