import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import t from 'tap'
import { hashPassword } from '../../src/auth/password.ts'
import { issueAccessToken } from '../../src/auth/tokens.ts'
import { SECRET_KEY, startTestPlatform } from '../helpers/env.ts'
import { startSmtpSink } from '../helpers/smtp.ts'
import { cliHome } from './cli.ts'

// Every step runs the `platform` binary as its own process (TypeScript loaded each time, 1-3 s of
// CPU on a 2-core machine): in a loaded suite this file outlasts the 180 s a file gets by default.
t.setTimeout(420_000)

/*
 * `platform login` against a real platform: a stored token (checked first), a password login, an
 * emailed code typed on stdin (read from the SMTP sink), the credentials file's modes, an expired
 * access token renewed with the refresh token, PLATFORM_TOKEN over the file, logout.
 */
const smtp = await startSmtpSink(t)
const codeOf = (text: string) => /\b(\d{6})\b/.exec(text)?.[1] ?? ''

interface Stored {
  url: string
  token: string
  refresh?: string
}
const stored = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Stored

t.test(
  '--token: checked, stored 0600 in a 0700 folder; whoami; PLATFORM_TOKEN wins; a bad token is refused',
  async (t) => {
    const env = await startTestPlatform(t, { AUTH_MODE: 'password' })
    const home = cliHome(t)
    const bad = await home.run(['login', '--url', env.base, '--token', 'not-a-token'])
    t.equal(bad.code, 1)
    t.match(bad.stderr, /refused the credential/)
    const ok = await home.run(['login', '--url', env.base, '--token', env.adminToken])
    t.equal(ok.code, 0, ok.stderr)
    t.same(stored(home.credentials), { url: env.base, token: env.adminToken })
    t.equal(statSync(home.credentials).mode & 0o777, 0o600, 'the file is 0600')
    t.equal(statSync(dirname(home.credentials)).mode & 0o777, 0o700, 'its folder is 0700')
    const me = await home.run(['whoami'])
    t.equal(me.code, 0, me.stderr)
    t.match(me.stdout, `admin@test.local at ${env.base}`)
    const user = await env.createUser('cli-other@test.local')
    const over = await home.run(['whoami'], { env: { PLATFORM_TOKEN: user.token } })
    t.match(over.stdout, 'cli-other@test.local', 'PLATFORM_TOKEN overrides the stored token')
    // a stored login is for its own URL only
    const elsewhere = await home.run(['whoami', '--url', 'http://127.0.0.1:9'])
    t.equal(elsewhere.code, 1)
    const out = await home.run(['logout'])
    t.equal(out.code, 0)
    t.throws(() => statSync(home.credentials), 'logout deletes the file')
  },
)

t.test('password mode: login with a password; an expired access token is renewed with the refresh token', async (t) => {
  const env = await startTestPlatform(t, { AUTH_MODE: 'password' })
  const user = await env.createUser('cli-pw@test.local')
  await env.sql('update users set password_hash = $1 where id = $2', [await hashPassword('correct horse'), user.id])
  const home = cliHome(t, env.base)
  const wrong = await home.run(['login', '--email', 'cli-pw@test.local', '--password', 'nope'])
  t.equal(wrong.code, 1)
  t.match(wrong.stderr, /401/)
  // the password from stdin when not given (piped: one line)
  const ok = await home.run(['login', '--email', 'cli-pw@test.local'], { stdin: 'correct horse\n' })
  t.equal(ok.code, 0, ok.stderr)
  t.match(ok.stderr, 'Logged in')
  const first = stored(home.credentials)
  t.equal(first.url, env.base)
  t.type(first.refresh, 'string', 'the refresh token is stored')
  t.equal(statSync(home.credentials).mode & 0o777, 0o600)

  // the access token expired: the next command renews it and stores the new pair
  const expired = await issueAccessToken(SECRET_KEY, { sub: user.id, email: 'cli-pw@test.local' }, -1)
  writeFileSync(home.credentials, JSON.stringify({ ...first, token: expired }))
  const me = await home.run(['whoami'])
  t.equal(me.code, 0, me.stderr)
  t.match(me.stdout, 'cli-pw@test.local')
  const renewed = stored(home.credentials)
  t.not(renewed.token, expired, 'a new access token is stored')
  t.not(renewed.refresh, first.refresh, 'and the rotated refresh token')
  t.equal(statSync(home.credentials).mode & 0o777, 0o600, 'still 0600 after the rewrite')

  // logout revokes the refresh token on the platform
  t.equal((await home.run(['logout'])).code, 0)
  const reuse = await env.request('POST', '/auth/refresh', { token: null, body: { refresh_token: renewed.refresh } })
  t.equal(reuse.status, 401, 'the stored refresh token was revoked')
})

t.test('otp mode: the emailed code typed on stdin', async (t) => {
  const env = await startTestPlatform(t, {
    AUTH_MODE: 'otp',
    SMTP_HOST: '127.0.0.1',
    SMTP_PORT: String(smtp.port),
    SMTP_DOMAIN: 'test.local',
  })
  await env.createUser('cli-otp@test.local')
  const home = cliHome(t, env.base)
  const live = home.spawn(['login', '--email', 'cli-otp@test.local'])
  const mail = await smtp.next('cli-otp@test.local')
  live.proc.stdin?.end(`${codeOf(mail.text)}\n`)
  t.equal(await live.exited, 0, live.stderr())
  t.match(live.stderr(), 'Logged in')
  const me = await home.run(['whoami'])
  t.match(me.stdout, 'cli-otp@test.local')

  // --code: a wrong one is refused
  const again = home.spawn(['login', '--email', 'cli-otp@test.local', '--code', '000000'])
  await smtp.next('cli-otp@test.local')
  t.equal(await again.exited, 1)
  t.match(again.stderr(), /auth\.invalid_otp/)
})
