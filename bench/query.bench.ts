import { removeTempDir, startPlatformChild, startServerChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids } from './lib/cpu.ts'
import { measure } from './lib/load.ts'
import { pgWireCounter } from './lib/pg-stats.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * Query execution cost: `POST /queries/{ns}/{name}/execute` on the platform (gateway + service in
 * one process, ROLES=all) vs a bare node:http server running the same statement with one
 * node-postgres `pool.query`. Both read the platform's own single-node Postgres. The platform does
 * per call: the gateway → NATS → service hop, authentication (warm cache), the query and connection
 * lookups, input validation, the owner's permission, and on the external connection BEGIN READ ONLY
 * + SET LOCAL statement_timeout, the statement under its row limit, and ROLLBACK with the session
 * reset (src/data/drivers/postgres.ts: pipelined, one round trip) — the ratio is what all that
 * costs in CPU per call. Then, one call at a time through a second connection to the same database
 * that passes a counting proxy (lib/pg-stats.ts pgWireCounter), the round trips, client writes and
 * transactions (BEGINs) per call, for the row's note. BENCH_QUERY_LOG sets the platform's
 * LOG_LEVEL (default warn).
 */
const COUNTED_CALLS = 200
const NAME = 'query'

async function run(): Promise<Row[]> {
  const rows: Row[] = []
  const dataDir = tempDir('bench-query-')
  let platform: ServerChild | undefined
  let direct: ServerChild | undefined
  let counter: Awaited<ReturnType<typeof pgWireCounter>> | undefined
  try {
    process.stderr.write('  starting platform...\n')
    platform = await startPlatformChild(dataDir, { LOG_LEVEL: process.env['BENCH_QUERY_LOG'] ?? 'warn' })
    const { token, databaseUrl } = platform.info
    if (token === undefined || databaseUrl === undefined)
      throw new Error('platform child reported no token / databaseUrl')
    const base = `http://127.0.0.1:${String(platform.info.port)}`
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    // A database connection names a TCP host (never a socket path); the platform's own pool may use
    // the local cluster's Unix socket, whose server listens on 127.0.0.1 at the same port. node-postgres
    // directly uses the same TCP address as the connection, so the two differ only in what is measured.
    // It is the platform's own database: allowed explicitly (allow_platform_database).
    const u = new URL(databaseUrl)
    if (decodeURIComponent(u.hostname).startsWith('/')) u.hostname = '127.0.0.1'
    const tcpUrl = u.toString()
    const conn = await fetch(`${base}/api/v1/database-connections`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        name: 'self',
        connection_type: 'postgresql',
        host: u.hostname,
        port: Number(u.port),
        database: u.pathname.slice(1),
        username: decodeURIComponent(u.username),
        password: decodeURIComponent(u.password),
        config: { max_pool_size: 5 },
        allow_platform_database: true,
      }),
    })
    if (conn.status !== 201) throw new Error(`connection: ${String(conn.status)} ${await conn.text()}`)
    const connId = ((await conn.json()) as { id: string }).id
    const q = await fetch(`${base}/api/v1/queries`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        namespace: 'bench',
        name: 'plus-one',
        database_connection_id: connId,
        sql: 'select :n::int + 1 as v, :user_email::text as who',
        input_schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      }),
    })
    if (q.status !== 201) throw new Error(`query: ${String(q.status)} ${await q.text()}`)
    counter = await pgWireCounter(u.hostname, Number(u.port))
    const counted = await fetch(`${base}/api/v1/database-connections`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        name: 'self-counted',
        connection_type: 'postgresql',
        host: '127.0.0.1',
        port: counter.port,
        database: u.pathname.slice(1),
        username: decodeURIComponent(u.username),
        password: decodeURIComponent(u.password),
        config: { max_pool_size: 1 },
        allow_platform_database: true,
      }),
    })
    if (counted.status !== 201) throw new Error(`connection: ${String(counted.status)} ${await counted.text()}`)
    const cq = await fetch(`${base}/api/v1/queries`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        namespace: 'bench',
        name: 'plus-one-counted',
        database_connection_id: ((await counted.json()) as { id: string }).id,
        sql: 'select :n::int + 1 as v, :user_email::text as who',
        input_schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      }),
    })
    if (cq.status !== 201) throw new Error(`query: ${String(cq.status)} ${await cq.text()}`)
    direct = await startServerChild('pg-direct', 'pg-direct.ts', { DATABASE_URL: tcpUrl, POOL_MAX: '5' })
    const body = JSON.stringify({ input: { n: 41 } })
    const check = async (url: string, headers: Record<string, string>) => {
      const r = await fetch(url, { method: 'POST', headers, body })
      if (r.status !== 200) throw new Error(`POST ${url}: ${String(r.status)} ${await r.text()}`)
    }
    process.stderr.write('  measuring node-postgres directly\n')
    await check(`http://127.0.0.1:${String(direct.info.port)}/`, { 'content-type': 'application/json' })
    const d = await measure({
      url: `http://127.0.0.1:${String(direct.info.port)}/`,
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
      pid: direct.pid,
    })
    rows.push({
      benchmark: NAME,
      case: 'node:http + pg pool.query',
      baseline: true,
      ...d,
      note: 'one statement per call',
    })
    process.stderr.write('  measuring the platform\n')
    const url = `${base}/queries/bench/plus-one/execute`
    await check(url, auth)
    const m = await measure({
      url,
      method: 'POST',
      body,
      headers: auth,
      pid: platform.pid,
      helperPids: childPids(platform.pid),
    })
    process.stderr.write(`  counting round trips over ${String(COUNTED_CALLS)} calls, one at a time\n`)
    const countedUrl = `${base}/queries/bench/plus-one-counted/execute`
    for (let i = 0; i < 10; i++) await check(countedUrl, auth) // the pool's one connection made and warm
    const c0 = counter.counts()
    for (let i = 0; i < COUNTED_CALLS; i++) await check(countedUrl, auth)
    const c1 = counter.counts()
    const per = (k: 'roundTrips' | 'clientWrites' | 'begins') => ((c1[k] - c0[k]) / COUNTED_CALLS).toFixed(2)
    // target (issues 14 and 43): ≤ 2× the CPU of the same statement through pg directly
    rows.push({
      benchmark: NAME,
      case: 'POST /queries/bench/plus-one/execute',
      ...m,
      limit: 2,
      note: `CPU of the platform process (gateway + service + pool); per call the query and connection come from the resource row cache; on the database connection, per call (counted through a proxy, one call at a time): ${per('roundTrips')} round trips, ${per('clientWrites')} client writes, ${per('begins')} transactions (node-postgres directly: 1 round trip, 1 write, 1 implicit transaction)`,
    })
  } finally {
    await direct?.stop()
    await platform?.stop()
    // after the platform: its pooled connection through the counter ends with it, not under it
    await counter?.close()
    removeTempDir(dataDir)
  }
  return rows
}

const bench: Benchmark = { name: NAME, description: 'query execute vs node-postgres directly (CPU per call)', run }
export default bench
