import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, lstatSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { isAlive } from '../../src/platform/local-services.ts'

// Two full starts of the platform (Postgres initdb, nats-server, migrations) and the token command:
// ~1 min on a quiet 2-core machine, over 2 min inside a loaded suite.
t.setTimeout(420_000)

/*
 * `npm start` as a user runs it: single-node mode starts its own nats-server and Postgres under
 * DATA_DIR, reports where everything is, serves the default agent to a token from `npm run token`,
 * stops everything on Ctrl-C, and a second start reuses the same data.
 */
const root = join(import.meta.dirname, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'platform-start-'))
t.teardown(() => {
  // as root with a 0700 temp dir the cluster lives under /var/lib/agent-platform, linked from DATA_DIR/pg
  const pg = join(dataDir, 'pg')
  if (existsSync(pg) && lstatSync(pg).isSymbolicLink())
    rmSync(join(realpathSync(pg), '..'), { recursive: true, force: true })
  rmSync(dataDir, { recursive: true, force: true })
})
const baseEnv = {
  ...process.env,
  DATA_DIR: dataDir,
  PORT: '0',
  LOG_LEVEL: 'warn',
  // no console: these tests are about the platform (tests/console/ start it)
  CONSOLE_PORT: '0',
  NATS_URL: '',
  DATABASE_URL: '',
  DATABASE_HOST: '',
  NATS_PREFIX: '',
}

function startCli(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; port: number; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'start'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 90 s:\n${out}`)), 90_000)
    const check = () => {
      const m = /API\s+http:\/\/localhost:(\d+)/.exec(out)
      if (m !== null && /Stop\s+Ctrl-C/.test(out)) {
        clearTimeout(timer)
        resolve({ child, port: Number(m[1]), output: () => out })
      }
    }
    child.stdout?.on('data', check)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`exited with ${String(code)} before it was up:\n${out}`))
    })
  })
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit')
    child.once('exit', (code) => resolve(code))
    child.kill('SIGINT')
  })
}

t.test('start, serve, stop, start again', async (t) => {
  const first = await startCli(baseEnv)
  t.match(first.output(), /NATS\s+nats:\/\/127\.0\.0\.1:\d+\s+\(local nats-server/)
  // the platform's own connections use the local cluster's Unix socket (its directory is short enough here)
  t.match(first.output(), /Postgres\s+postgres:\/\/postgres:\*\*\*@\/\S+:\d+\/platform\s+\(local cluster/)
  t.notMatch(first.output(), /postgres:\/\/postgres:[^*]/, 'the database password is not printed')
  const health = await fetch(`http://127.0.0.1:${String(first.port)}/health`)
  t.equal(health.status, 200)
  const docs = await fetch(`http://127.0.0.1:${String(first.port)}/docs`)
  t.equal(docs.status, 200)
  // Not spawnSync: a blocked event loop cannot see the server close the kept-alive connection of
  // the fetches above when it idles out (the token command can take longer than that on a loaded
  // machine), and the next fetch then reuses a closed socket ("other side closed").
  const tokenRun = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'token'], {
    cwd: root,
    env: baseEnv,
    encoding: 'utf8',
  }).then(
    (r) => ({ status: 0, ...r }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({
      status: err.code ?? 1,
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? String(err),
    }),
  )
  t.equal(tokenRun.status, 0, tokenRun.stderr)
  const token = tokenRun.stdout.trim()
  const agents = await fetch(`http://127.0.0.1:${String(first.port)}/api/v1/agents`, {
    headers: { authorization: `Bearer ${token}` },
  })
  t.equal(agents.status, 200)
  const list = (await agents.json()) as { id: string; namespace: string; name: string }[]
  const def = list.find((a) => a.namespace === 'default' && a.name === 'default')
  t.ok(def, 'the default agent is listed')
  const runtime = JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')) as {
    natsUrl: string
    databaseUrl: string
  }
  t.match(runtime.natsUrl, /^nats:\/\//)
  const socketDir = decodeURIComponent(new URL(runtime.databaseUrl).hostname)
  t.ok(
    socketDir.startsWith('/') && existsSync(join(socketDir, `.s.PGSQL.${new URL(runtime.databaseUrl).port}`)),
    `Postgres over its Unix socket in ${socketDir} (npm run token above used it)`,
  )
  const pids = [
    Number(readFileSync(join(dataDir, 'nats', 'nats.pid'), 'utf8')),
    Number(readFileSync(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]),
  ]
  t.ok(pids.every(isAlive), 'nats-server and postgres run as children')
  t.equal(await stop(first.child), 0, 'Ctrl-C exits cleanly')
  t.ok(
    pids.every((p) => !isAlive(p)),
    'nothing is left running',
  )

  const second = await startCli(baseEnv)
  const again = await fetch(`http://127.0.0.1:${String(second.port)}/api/v1/agents/default/default`, {
    headers: { authorization: `Bearer ${token}` },
  })
  t.equal(again.status, 200, 'the same secrets and data: the old token still works')
  t.equal(((await again.json()) as { id: string }).id, def?.id, 'the same default agent')
  t.equal(await stop(second.child), 0)
})

t.test('a bad setting stops the start with a clear message', async (t) => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'start'], {
    cwd: root,
    env: { ...baseEnv, PORT: 'eighty', SANDBOX_EXECUTOR: 'maybe' },
    encoding: 'utf8',
  })
  t.equal(r.status, 1)
  t.match(r.stderr, /PORT: Expected integer/)
  t.match(r.stderr, /SANDBOX_EXECUTOR: must be one of/)
  const prod = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'start'], {
    cwd: root,
    env: { ...baseEnv, NODE_ENV: 'production' },
    encoding: 'utf8',
  })
  t.equal(prod.status, 1)
  t.match(
    prod.stderr,
    /production mode requires SECRET_KEY, ENCRYPTION_KEY, DATABASE_PASSWORD, SUPERADMIN_EMAIL, DOMAIN/,
  )
})
