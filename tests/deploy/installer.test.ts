import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig } from '../../src/kernel/config.ts'
import { cliHome } from '../command-line/cli.ts'

/*
 * `platform install` writes its files under a temporary root (`--dir`); systemd's own checker
 * (`systemd-analyze verify`) reads the units and Caddy's (`caddy validate`, and `caddy adapt` for
 * what the site does) reads the Caddyfile. Nothing is started: there is no systemd running here,
 * and the certificate of a test domain cannot be obtained.
 */
const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0

/** Debian's caddy, installed with apt as root when missing (tests/run.sh installs it too). */
function ensureCaddy(): string | false {
  if (has('caddy')) return false
  if (process.getuid?.() !== 0)
    return 'caddy is missing (install: apt-get install caddy); not root, so not installed here'
  const r = spawnSync(
    'sh',
    [
      '-c',
      'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends caddy || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends caddy)',
    ],
    { stdio: 'ignore', timeout: 300_000 },
  )
  return r.status === 0 && has('caddy') ? false : 'caddy could not be installed with apt'
}

const systemdSkip = has('systemd-analyze') ? false : 'systemd-analyze is missing (Debian package systemd)'
const caddySkip = ensureCaddy()

/** The environment file as systemd reads it (NAME=value lines), through the platform's own parser. */
function configOf(file: string) {
  const env: Record<string, string> = {}
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line)
    if (m !== null) env[m[1] as string] = m[2] as string
  }
  return loadConfig(env)
}

/** systemd-analyze verify of unit files: exit 0 and not one complaint about them. */
function verifyUnits(t: Test, files: string[]): void {
  const r = spawnSync('systemd-analyze', ['verify', ...files], { encoding: 'utf8' })
  t.equal(r.status, 0, `systemd-analyze verify exits 0 ${r.stderr}`)
  const complaints = r.stderr.split('\n').filter((l) => files.some((f) => l.includes(f)))
  t.same(complaints, [], 'no warning about the units')
}

/** caddy validate and the JSON config the Caddyfile becomes. */
function caddy(t: Test, file: string): Record<string, unknown> {
  const home = mkdtempSync(join(tmpdir(), 'caddy-home-'))
  t.teardown(() => rmSync(home, { recursive: true, force: true }))
  const env = { ...process.env, HOME: home, XDG_DATA_HOME: join(home, 'data'), XDG_CONFIG_HOME: join(home, 'config') }
  const v = spawnSync('caddy', ['validate', '--config', file, '--adapter', 'caddyfile'], { encoding: 'utf8', env })
  t.equal(v.status, 0, `caddy validate exits 0 ${v.stderr.slice(-500)}`)
  t.match(v.stdout + v.stderr, /Valid configuration/)
  const a = spawnSync('caddy', ['adapt', '--config', file, '--adapter', 'caddyfile'], { encoding: 'utf8', env })
  t.equal(a.status, 0, 'caddy adapt exits 0')
  return JSON.parse(a.stdout) as Record<string, unknown>
}

t.test('single node: one service running every role, a Caddy site with automatic TLS', async (t) => {
  const home = cliHome(t)
  const root = mkdtempSync(join(tmpdir(), 'platform-install-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const r = await home.run(['install', '--domain', 'platform.example.com', '--dir', root])
  t.equal(r.code, 0, r.stderr)
  t.match(r.stderr, /systemctl daemon-reload && systemctl enable --now agent-platform\.service/)

  const unitPath = join(root, 'etc/systemd/system/agent-platform.service')
  const unit = readFileSync(unitPath, 'utf8')
  t.match(unit, /^ExecStart=\/\S*node --import tsx src\/cli\.ts start$/m, 'runs what npm start runs')
  t.match(unit, /^EnvironmentFile=\/etc\/agent-platform\/platform\.env$/m)
  t.notMatch(unit, /^Environment=ROLES=/m, 'every role (ROLES defaults to all)')
  t.match(unit, /^WantedBy=multi-user\.target$/m)
  t.notMatch(unit, /SECRET_KEY|ENCRYPTION_KEY|PASSWORD/, 'no secret in the unit')

  const envPath = join(root, 'etc/agent-platform/platform.env')
  t.equal(statSync(envPath).mode & 0o777, 0o600, 'the env file is 0600')
  const env = readFileSync(envPath, 'utf8')
  for (const k of ['SECRET_KEY', 'ENCRYPTION_KEY', 'DATABASE_PASSWORD'])
    t.match(env, new RegExp(`^${k}=[A-Za-z0-9_-]{43}$`, 'm'), `${k} generated`)
  t.match(env, /^NODE_ENV=production$/m)
  t.match(env, /^DOMAIN=platform\.example\.com$/m)
  t.match(env, /^SUPERADMIN_EMAIL=admin@platform\.example\.com$/m)
  t.match(env, /^HOST=127\.0\.0\.1$/m, 'the gateway on loopback only, behind Caddy')
  t.match(env, /^TRUSTED_PROXIES=127\.0\.0\.1$/m)
  const config = configOf(envPath)
  t.equal(config.NODE_ENV, 'production', 'the platform loads it in production mode (every required setting there)')
  t.equal(config.NATS_URL, '', 'single-node: the platform starts its own NATS')
  t.equal(config.DATA_DIR, '/var/lib/agent-platform')

  t.test('systemd-analyze verify', { skip: systemdSkip }, async (t) => verifyUnits(t, [unitPath]))
  t.test('caddy validate', { skip: caddySkip }, async (t) => {
    const config = caddy(t, join(root, 'etc/caddy/Caddyfile'))
    const text = JSON.stringify(config)
    t.match(text, /"host":\["platform\.example\.com"\]/, 'the site answers for the domain')
    t.match(text, /"listen":\[":443"\]/, 'on HTTPS (automatic TLS: Caddy obtains the certificate)')
    t.match(text, /"dial":"127\.0\.0\.1:8000"/, 'proxied to the gateway')
    t.match(text, /"flush_interval":-1/, 'SSE flushed at once')
    t.match(text, /"email":"admin@platform\.example\.com"/, 'the ACME account')
    t.match(text, /"path":\["\/metrics"\]/, '/metrics answered by Caddy itself (404), not proxied')
  })

  // A second install keeps the keys: data encrypted with them stays readable.
  const again = await home.run(['install', '--domain', 'platform.example.com', '--dir', root])
  t.equal(again.code, 0)
  t.equal(readFileSync(envPath, 'utf8'), env, 'the env file is kept')
  t.match(again.stderr, /kept/)
})

t.test('split: a service per role and a target; the existing Caddyfile is saved', async (t) => {
  const home = cliHome(t)
  const root = mkdtempSync(join(tmpdir(), 'platform-install-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const caddyDir = join(root, 'etc/caddy')
  spawnSync('mkdir', ['-p', caddyDir])
  writeFileSync(join(caddyDir, 'Caddyfile'), ':80 {\n\trespond "hello"\n}\n')
  const r = await home.run([
    'install',
    '--domain',
    'api.example.org',
    '--dir',
    root,
    '--split',
    '--port',
    '8100',
    '--email',
    'ops@example.org',
    '--nats-url',
    'nats://10.0.0.5:4222',
    '--database-url',
    'postgres://platform:pw@10.0.0.6:5432/platform',
  ])
  t.equal(r.code, 0, r.stderr)
  t.match(r.stderr, /systemctl enable --now agent-platform\.target/)
  t.equal(readFileSync(join(caddyDir, 'Caddyfile.before-agent-platform'), 'utf8'), ':80 {\n\trespond "hello"\n}\n')
  const units = ['gateway', 'resources', 'workers', 'actors'].map((role) => {
    const path = join(root, `etc/systemd/system/agent-platform-${role}.service`)
    const text = readFileSync(path, 'utf8')
    t.match(text, new RegExp(`^Environment=ROLES=${role}$`, 'm'), `${role}: ROLES=${role}`)
    t.match(text, /^PartOf=agent-platform\.target$/m)
    t.match(text, /^WantedBy=agent-platform\.target$/m)
    return path
  })
  const target = join(root, 'etc/systemd/system/agent-platform.target')
  t.match(
    readFileSync(target, 'utf8'),
    /^Wants=agent-platform-gateway\.service agent-platform-resources\.service agent-platform-workers\.service agent-platform-actors\.service$/m,
  )
  const env = readFileSync(join(root, 'etc/agent-platform/platform.env'), 'utf8')
  t.match(env, /^NATS_URL=nats:\/\/10\.0\.0\.5:4222$/m)
  t.match(env, /^DATABASE_URL=postgres:\/\/platform:pw@10\.0\.0\.6:5432\/platform$/m)
  t.match(env, /^PORT=8100$/m)
  t.equal(configOf(join(root, 'etc/agent-platform/platform.env')).NATS_URL, 'nats://10.0.0.5:4222', 'it loads')

  t.test('systemd-analyze verify', { skip: systemdSkip }, async (t) => verifyUnits(t, [...units, target]))
  t.test('caddy validate', { skip: caddySkip }, async (t) => {
    const text = JSON.stringify(caddy(t, join(caddyDir, 'Caddyfile')))
    t.match(text, /"host":\["api\.example\.org"\]/)
    t.match(text, /"dial":"127\.0\.0\.1:8100"/)
  })
})

t.test('--dry-run writes nothing and masks the secrets; bad input is refused', async (t) => {
  const home = cliHome(t)
  const root = mkdtempSync(join(tmpdir(), 'platform-install-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const r = await home.run(['install', '--domain', 'platform.example.com', '--dir', root, '--dry-run'])
  t.equal(r.code, 0)
  t.match(r.stdout, /SECRET_KEY=\*\*\*/)
  t.notMatch(r.stdout, /SECRET_KEY=[A-Za-z0-9_-]{20}/, 'no key printed')
  t.match(r.stdout, /\[Service\]/)
  t.match(r.stdout, /reverse_proxy 127\.0\.0\.1:8000/)
  t.same(spawnSync('find', [root, '-type', 'f'], { encoding: 'utf8' }).stdout, '', 'nothing written')

  const noDomain = await home.run(['install', '--dir', root])
  t.equal(noDomain.code, 1)
  t.match(noDomain.stderr, /--domain/)
  const badDomain = await home.run(['install', '--domain', 'not a domain', '--dir', root])
  t.equal(badDomain.code, 1)
  const splitAlone = await home.run(['install', '--domain', 'a.example.com', '--dir', root, '--split'])
  t.equal(splitAlone.code, 1)
  t.match(splitAlone.stderr, /--nats-url and --database-url/)
})
