import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { nkeys } from '@nats-io/transport-node'
import t from 'tap'
import { ConfigSchema, configTable, loadConfig } from '../../src/kernel/config.ts'
import { natsAuthOf } from '../../src/platform/nats.ts'

/* Configuration: defaults, conversion, clear errors, production requirements, development secrets. */
const dir = mkdtempSync(join(tmpdir(), 'cfg-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

t.test('the documented defaults', async (t) => {
  const c = loadConfig({ DATA_DIR: dir })
  t.match(c, {
    PORT: 8000,
    FUNCTION_TIMEOUT: 300,
    MAX_FUNCTION_MEMORY: 512,
    MAX_FUNCTION_CPU: 1,
    MAX_FUNCTION_STORAGE: '1g',
    SANDBOX_EXECUTOR: 'pool',
    TRUSTED_EXECUTOR: 'shared',
    SANDBOX_MIN_SIZE: 4,
    SANDBOX_MAX_SIZE: 20,
    SANDBOX_MIN_IDLE: 2,
    SANDBOX_MAX_EXECUTIONS: 100,
    QUEUE_FUNCTION_CONCURRENCY: 10,
    QUEUE_AGENT_CONCURRENCY: 5,
    QUEUE_AGENT_SUB_CONCURRENCY: 5,
    MAX_TOOL_ITERATIONS: 25,
    MAX_HISTORY_MESSAGES: 100,
    AGENT_JOB_TIMEOUT: 600,
    AGENT_DELEGATE_MODE: 'block',
    AGENT_MAX_DELEGATION_DEPTH: 5,
    TOOL_RESULT_CONTEXT_MAX_SIZE: 102400,
    RATE_LIMIT_LOGIN_IP_MAX: 10,
    RATE_LIMIT_LOGIN_EMAIL_MAX: 5,
    RATE_LIMIT_OTP_IP_MAX: 10,
    RATE_LIMIT_WINDOW_SECONDS: 900,
    OTP_EXPIRE_MINUTES: 10,
    OTP_MAX_ATTEMPTS: 2,
    ACCESS_TOKEN_EXPIRE_MINUTES: 15,
    REFRESH_TOKEN_EXPIRE_DAYS: 30,
    SMTP_PORT: 587,
    DATABASE_USER: 'postgres',
    DATABASE_PORT: 5432,
    AUTO_APPLY_CONFIG: false,
    ANALYTICS_PORT: 8123,
    ANALYTICS_RETENTION_DAYS: 90,
    TOKEN_EXCHANGE_DEFAULT_ROLE: 'GuestUsers',
    AUTH_MODE: 'otp',
    DEBUG: false,
  })
  t.equal(c.MAX_EXECUTION_DEPTH, c.DEFAULT_WORKER_COUNT, 'MAX_EXECUTION_DEPTH defaults to DEFAULT_WORKER_COUNT')
  t.equal(loadConfig({ DATA_DIR: dir, DEFAULT_WORKER_COUNT: '7' }).MAX_EXECUTION_DEPTH, 7)
  t.equal(loadConfig({ DATA_DIR: dir, MAX_EXECUTION_DEPTH: '0' }).MAX_EXECUTION_DEPTH, 0)
})

t.test('values are converted to their types', async (t) => {
  const c = loadConfig({
    DATA_DIR: dir,
    PORT: '9001',
    DEBUG: 'true',
    MAX_FUNCTION_CPU: '0.5',
    AGENT_DELEGATE_MODE: 'suspend',
    QUEUE_STORE_URL: 'nats://q:4222',
  })
  t.equal(c.PORT, 9001)
  t.equal(c.DEBUG, true)
  t.equal(c.MAX_FUNCTION_CPU, 0.5)
  t.equal(c.AGENT_DELEGATE_MODE, 'suspend')
  t.equal(c.NATS_URL, 'nats://q:4222', 'QUEUE_STORE_URL is an alias of NATS_URL')
})

t.test('bad values give one clear error naming each', async (t) => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ PORT: 'eighty' }, /PORT: Expected integer/],
    [{ PORT: '70000' }, /PORT/],
    [{ SANDBOX_EXECUTOR: 'docker' }, /SANDBOX_EXECUTOR: must be one of pool, single_use, k8s_pod, disabled/],
    [{ AUTH_MODE: 'magic' }, /AUTH_MODE/],
    [{ K8S_SANDBOX_TOLERATIONS: '[oops' }, /K8S_SANDBOX_TOLERATIONS/],
    [{ MAX_FUNCTION_STORAGE: 'lots' }, /MAX_FUNCTION_STORAGE/],
    [{ DEBUG: 'perhaps' }, /DEBUG/],
    [{ SECRET_KEY: 'short' }, /SECRET_KEY must be at least 32 characters/],
  ]
  for (const [env, message] of bad) {
    t.throws(() => loadConfig({ DATA_DIR: dir, ...env }), { code: /config\./, message }, JSON.stringify(env))
  }
  t.throws(
    () => loadConfig({ DATA_DIR: dir, PORT: 'x', SMTP_PORT: 'y' }),
    { message: /PORT.*SMTP_PORT/ },
    'all problems at once',
  )
})

t.test('production refuses to start without the required settings', async (t) => {
  t.throws(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: dir }), {
    code: 'config.missing',
    message: /SECRET_KEY, ENCRYPTION_KEY, DATABASE_PASSWORD, SUPERADMIN_EMAIL, DOMAIN/,
  })
  const ok = loadConfig({
    NODE_ENV: 'production',
    DATA_DIR: join(dir, 'prod'),
    SECRET_KEY: 's'.repeat(40),
    ENCRYPTION_KEY: 'e'.repeat(40),
    DATABASE_PASSWORD: 'pw',
    SUPERADMIN_EMAIL: 'root@example.com',
    DOMAIN: 'example.com',
  })
  t.equal(ok.SUPERADMIN_EMAIL, 'root@example.com')
  t.notOk(existsSync(join(dir, 'prod', 'secrets.json')), 'production never writes generated secrets')
})

t.test('a console-only process (ROLES=console) needs no secret in production', async (t) => {
  const consoleOnly = loadConfig({
    NODE_ENV: 'production',
    DATA_DIR: join(dir, 'console'),
    ROLES: 'console',
    CONSOLE_API_URL: 'http://gateway:8000',
  })
  t.equal(consoleOnly.SECRET_KEY, '', 'no SECRET_KEY: it signs and verifies nothing')
  t.equal(consoleOnly.DATABASE_PASSWORD, '')
  t.notOk(existsSync(join(dir, 'console')), 'and writes nothing to DATA_DIR')
  t.throws(
    () => loadConfig({ NODE_ENV: 'production', DATA_DIR: dir, ROLES: 'console,gateway' }),
    { code: 'config.missing' },
    'with another role the secrets are required again',
  )
})

t.test('development generates secrets once and reuses them', async (t) => {
  const dev = join(dir, 'dev')
  const a = loadConfig({ DATA_DIR: dev })
  const b = loadConfig({ DATA_DIR: dev })
  t.equal(a.SECRET_KEY, b.SECRET_KEY)
  t.equal(a.ENCRYPTION_KEY, b.ENCRYPTION_KEY)
  t.not(a.SECRET_KEY, a.ENCRYPTION_KEY)
  t.equal(a.SUPERADMIN_EMAIL, 'admin@localhost')
  const stored = JSON.parse(readFileSync(join(dev, 'secrets.json'), 'utf8')) as Record<string, string>
  t.equal(stored['SECRET_KEY'], a.SECRET_KEY)
  t.equal(
    loadConfig({ DATA_DIR: dev, SECRET_KEY: 'x'.repeat(32) }).SECRET_KEY,
    'x'.repeat(32),
    'an explicit value wins',
  )
})

t.test('the config table lists every setting', async (t) => {
  const table = configTable()
  for (const key of Object.keys(ConfigSchema.properties)) t.match(table, `\`${key}\``)
})

t.test('NATS credentials: one way at most, a password only with its user; what connectNats is given', async (t) => {
  t.throws(
    () => loadConfig({ DATA_DIR: dir, NATS_USER: 'u', NATS_PASSWORD: 'p', NATS_TOKEN: 'x' }),
    /set one of NATS_USER\/NATS_PASSWORD, NATS_TOKEN, NATS_NKEY_FILE, NATS_CREDS_FILE/,
  )
  t.throws(() => loadConfig({ DATA_DIR: dir, NATS_TOKEN: 'x', NATS_NKEY_FILE: '/k.nk' }), /set one of/)
  t.throws(() => loadConfig({ DATA_DIR: dir, NATS_PASSWORD: 'p' }), /NATS_PASSWORD needs NATS_USER/)
  t.same(natsAuthOf(loadConfig({ DATA_DIR: dir, NATS_USER: 'u', NATS_PASSWORD: 'p' })), { user: 'u', pass: 'p' })
  t.same(natsAuthOf(loadConfig({ DATA_DIR: dir, NATS_TOKEN: 'x' })), { token: 'x' })
  t.same(natsAuthOf(loadConfig({ DATA_DIR: dir })), {}, 'none: anonymous')
  const seedFile = join(dir, 'edge.nk')
  writeFileSync(seedFile, `# a comment\n${new TextDecoder().decode(nkeys.createUser().getSeed())}\n`)
  const fromFile = natsAuthOf(loadConfig({ DATA_DIR: dir, NATS_NKEY_FILE: seedFile }))
  t.type(fromFile.authenticator, 'function')
  t.equal(fromFile.inboxPrefix, undefined, "no inbox line: nats.js's default")
  writeFileSync(seedFile, `# inbox_prefix: _INBOX_edge\n${new TextDecoder().decode(nkeys.createUser().getSeed())}\n`)
  t.equal(
    natsAuthOf(loadConfig({ DATA_DIR: dir, NATS_NKEY_FILE: seedFile })).inboxPrefix,
    '_INBOX_edge',
    "the seed file's inbox prefix",
  )
  t.equal(
    natsAuthOf(loadConfig({ DATA_DIR: dir, NATS_NKEY_FILE: seedFile, NATS_INBOX_PREFIX: '_IN_x' })).inboxPrefix,
    '_IN_x',
    'NATS_INBOX_PREFIX wins',
  )
  writeFileSync(seedFile, 'not a seed\n')
  t.throws(() => natsAuthOf(loadConfig({ DATA_DIR: dir, NATS_NKEY_FILE: seedFile })), /holds no NATS user seed/)
})
