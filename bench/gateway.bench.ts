import { randomBytes } from 'node:crypto'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServerChild, type ServerChild } from './lib/children.ts'
import { childPids } from './lib/cpu.ts'
import { expectOk, measure, type LoadTarget } from './lib/load.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * The gateway against a bare uWebSockets.js hello-world, each in a process of its own:
 *   baseline      uws hello-world
 *   /health       answered by the gateway itself
 *   JSON, 1 proc  GET /api/v1/agents/default/default, gateway + resource service in one process (ROLES=all)
 *   JSON, split   the same route, ROLES=gateway in one process and ROLES=resources in another
 * The platform process starts its own nats-server and Postgres in a temporary DATA_DIR; the split
 * pair uses them with NATS_PREFIX=bench so the first process's service does not answer for them.
 */
const NAME = 'gateway'
const JSON_PATH = '/api/v1/agents/default/default'
/** The target: gateway CPU per request at most twice the bare uWS server's. */
const LIMIT = 2

const toRow = (label: string, m: Awaited<ReturnType<typeof measure>>, extra: Partial<Row> = {}): Row => ({
  benchmark: NAME,
  case: label,
  ...m,
  ...extra,
})

async function run(): Promise<Row[]> {
  const rows: Row[] = []
  const started: ServerChild[] = []
  const start = async (name: string, script: string, env: Record<string, string>) => {
    process.stderr.write(`  starting ${name}...\n`)
    const child = await startServerChild(name, script, env)
    started.push(child)
    return child
  }
  const load = async (label: string, target: LoadTarget, extra: Partial<Row> = {}) => {
    process.stderr.write(`  measuring ${label}\n`)
    await expectOk(target.url, target.headers)
    rows.push(toRow(label, await measure(target), extra))
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-gateway-'))
  // Postgres runs as the postgres user when we are root: it must be able to enter DATA_DIR.
  chmodSync(dataDir, 0o755)
  const common = {
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    AUTO_APPLY_CONFIG: 'false',
    SECRET_KEY: randomBytes(32).toString('base64url'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64url'),
    DATABASE_PASSWORD: randomBytes(16).toString('hex'),
    QUEUE_STORE_URL: '',
    DATABASE_HOST: '',
  }
  try {
    const hello = await start('uws-hello', 'uws-hello.ts', {})
    await load('uws hello-world (baseline)', { url: `http://127.0.0.1:${String(hello.info.port)}/`, pid: hello.pid }, { baseline: true })
    await hello.stop()

    const platform = await start('platform', 'platform.ts', { ...common, ROLES: 'all', NATS_URL: '', DATABASE_URL: '', NATS_PREFIX: '' })
    const { token, natsUrl, databaseUrl } = platform.info
    if (token === undefined || natsUrl === undefined || databaseUrl === undefined) throw new Error('platform child reported no token / natsUrl / databaseUrl')
    const auth = { authorization: `Bearer ${token}` }
    const base = `http://127.0.0.1:${String(platform.info.port)}`
    const localServers = childPids(platform.pid) // nats-server and Postgres
    await load('gateway GET /health', { url: `${base}/health`, pid: platform.pid, helperPids: localServers }, { limit: LIMIT })
    await load(
      `GET ${JSON_PATH}, gateway+service in 1 process`,
      { url: `${base}${JSON_PATH}`, headers: auth, pid: platform.pid, helperPids: localServers },
      { note: 'CPU is the whole platform process: gateway, resource service and its Postgres client (ROLES=all)' },
    )

    const split = { ...common, NATS_URL: natsUrl, DATABASE_URL: databaseUrl, NATS_PREFIX: 'bench' }
    const resources = await start('resources', 'platform.ts', { ...split, ROLES: 'resources' })
    const gateway = await start('gateway', 'platform.ts', { ...split, ROLES: 'gateway' })
    await load(
      `GET ${JSON_PATH}, ROLES=gateway process`,
      { url: `http://127.0.0.1:${String(gateway.info.port)}${JSON_PATH}`, headers: auth, pid: gateway.pid, helperPids: [resources.pid, platform.pid] },
      { limit: LIMIT, note: 'CPU is the ROLES=gateway process only; "other" is the ROLES=resources process, nats-server and Postgres' },
    )
  } finally {
    for (const child of started.reverse()) await child.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  return rows
}

const bench: Benchmark = {
  name: NAME,
  description: 'platform gateway (GET /health, authenticated JSON route over NATS) vs a bare uWebSockets.js hello-world',
  run,
}
export default bench
