import t from 'tap'
import { createLogger } from '../../src/kernel/log.ts'
import { startPlatform, type Platform } from '../../src/main.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * SUPERADMIN_PASSWORD across restarts of one platform on the same database (and NATS prefix): a
 * restart with the same setting changes nothing (the stored hash and the sessions stay); a restart
 * with another one resets the password and revokes the superadmin's sessions, refresh and access
 * tokens alike; an empty setting leaves the password as it is.
 */
const env = await startTestPlatform(t, { AUTH_MODE: 'password', SUPERADMIN_PASSWORD: 'first-password-1' })
const email = env.config.SUPERADMIN_EMAIL
let current: Platform = env.platform

/** Stops the running platform and starts it again on the same database with `password` as SUPERADMIN_PASSWORD. */
async function restart(password: string): Promise<string> {
  await current.close()
  current = await startPlatform(
    { ...env.config, PORT: 0, SUPERADMIN_PASSWORD: password },
    createLogger({ level: 'silent' }),
  )
  const started = current
  t.teardown(() => started.close())
  return `http://127.0.0.1:${String(current.gateway?.port)}`
}

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' }
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) }
}
const login = (base: string, password: string) => call(base, 'POST', '/auth/login', { email, password })
const storedHash = async () =>
  (await env.sql<{ password_hash: string }>('select password_hash from users where lower(email) = $1', [email]))[0]
    ?.password_hash

t.test('SUPERADMIN_PASSWORD on restarts of one platform on the same database', async (t) => {
  const first = await login(env.base, 'first-password-1')
  t.equal(first.status, 200, 'the first start set the password')
  const session = first.body as { access_token: string; refresh_token: string }
  const hashBefore = await storedHash()

  const same = await restart('first-password-1')
  t.equal(await storedHash(), hashBefore, 'the same setting: the stored hash is not rewritten')
  t.equal(
    (await call(same, 'GET', '/auth/me', undefined, session.access_token)).status,
    200,
    'and the session is kept (access token)',
  )
  const refreshed = await call(same, 'POST', '/auth/refresh', { refresh_token: session.refresh_token })
  t.equal(refreshed.status, 200, '(refresh token)')
  const live = refreshed.body as { access_token: string; refresh_token: string }

  const changed = await restart('second-password-2')
  t.not(await storedHash(), hashBefore, 'another setting: the password is reset')
  t.match(
    await login(changed, 'first-password-1'),
    { status: 401, body: { code: 'auth.invalid_credentials' } },
    'the old password no longer works',
  )
  t.equal((await login(changed, 'second-password-2')).status, 200, 'the new one does')
  t.match(
    await call(changed, 'POST', '/auth/refresh', { refresh_token: live.refresh_token }),
    { status: 401 },
    "the superadmin's refresh tokens from before the reset are revoked",
  )
  t.match(
    await call(changed, 'GET', '/auth/me', undefined, live.access_token),
    { status: 401, body: { code: 'auth.session_revoked' } },
    'and so are its access tokens, before they expire',
  )

  const kept = await restart('')
  t.equal((await login(kept, 'second-password-2')).status, 200, 'an empty setting leaves the stored password as it is')
})
