import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import { committedTransactions } from './lib/pg-stats.ts'
import { childPids } from './lib/cpu.ts'
import { expectOk, measure, type LoadTarget } from './lib/load.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * What authentication costs per request, in one platform process (ROLES=all):
 *   baseline   GET /auth/info                                 no credentials
 *   JWT        GET /api/v1/roles/permissions/reference        bearer JWT, principal from AUTH_CACHE
 *   API key    the same route with X-API-Key                  key + owner from AUTH_CACHE
 * The route's handler reads no table, so the Postgres transactions counted during a run
 * (pg_stat_database.xact_commit of the platform database; background work such as the job
 * mirror included) show whether authentication reaches Postgres when warm: it should be ~0 per request.
 */
const NAME = 'auth'
const PATH = '/api/v1/roles/permissions/reference'

async function run(): Promise<Row[]> {
  const rows: Row[] = []
  const dataDir = tempDir('bench-auth-')
  let child: ServerChild | undefined
  try {
    process.stderr.write('  starting platform...\n')
    child = await startPlatformChild(dataDir)
    const { token, databaseUrl } = child.info
    if (token === undefined || databaseUrl === undefined)
      throw new Error('platform child reported no token / databaseUrl')
    const base = `http://127.0.0.1:${String(child.info.port)}`
    const minted = await fetch(`${base}/api/v1/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', permissions: { 'platform.*:all': true } }),
    })
    if (minted.status !== 201) throw new Error(`minting a key: ${String(minted.status)} ${await minted.text()}`)
    const apiKey = ((await minted.json()) as { key: string }).key
    const helpers = childPids(child.pid)
    const pid = child.pid
    const load = async (label: string, target: LoadTarget, extra: Partial<Row> = {}) => {
      process.stderr.write(`  measuring ${label}\n`)
      await expectOk(target.url, target.headers)
      const before = await committedTransactions(databaseUrl)
      const m = await measure(target)
      const perReq = (await committedTransactions(databaseUrl)) - before
      const note = `Postgres transactions per request during the run (warm-up included): ${(perReq / Math.max(1, m.requests)).toFixed(4)}`
      rows.push({
        benchmark: NAME,
        case: label,
        ...m,
        ...extra,
        note: extra.note === undefined ? note : `${extra.note}; ${note}`,
      })
    }
    await load(
      'GET /auth/info, no credentials',
      { url: `${base}/auth/info`, pid, helperPids: helpers },
      { baseline: true },
    )
    await load(
      `GET ${PATH}, JWT`,
      { url: `${base}${PATH}`, headers: { authorization: `Bearer ${token}` }, pid, helperPids: helpers },
      { note: 'CPU is the whole platform process (gateway + service)' },
    )
    await load(`GET ${PATH}, X-API-Key`, {
      url: `${base}${PATH}`,
      headers: { 'x-api-key': apiKey },
      pid,
      helperPids: helpers,
    })
  } finally {
    await child?.stop()
    removeTempDir(dataDir)
  }
  return rows
}

const bench: Benchmark = {
  name: NAME,
  description:
    'authentication cost: no credentials vs JWT vs API key, CPU and Postgres transactions per request (AUTH_CACHE warm)',
  run,
}
export default bench
