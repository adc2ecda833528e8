import { spawnSync } from 'node:child_process'
import { removeTempDir, startPlatformChild, startServerChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids } from './lib/cpu.ts'
import { measure } from './lib/load.ts'
import { measureSequential } from './lib/sequential.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * What a connector call costs on top of calling the upstream API directly:
 *   baseline   GET http://198.51.100.24:<port>/contacts/42            the upstream (node:http, its own process)
 *   connector  POST /api/v1/connectors/bench/crm/operations/get/execute   gateway → NATS → service → guarded client → upstream
 * The guarded client refuses loopback, so the upstream listens on a documentation address added to
 * `lo` for the run (needs root and iproute2) and is allowed over plain HTTP (CONNECTOR_HTTP_HOSTS):
 * no TLS on either side, so the difference is the platform's own work. The connector row's CPU is
 * the platform process; the upstream's CPU is in "other". The first three rows are under load
 * (autocannon, 50 connections); the last two send one request at a time, for the latency the
 * call adds (the target: ≤ 1 ms at p50 over calling the upstream directly).
 */
const NAME = 'connector'
const ADDRESS = '198.51.100.24'

async function run(): Promise<Row[]> {
  if (process.getuid?.() !== 0) throw new Error('the connector benchmark needs root (it adds 198.51.100.24 to lo)')
  const added = spawnSync('ip', ['addr', 'add', `${ADDRESS}/32`, 'dev', 'lo'], { encoding: 'utf8' })
  if (added.status !== 0 && !/exists/i.test(added.stderr))
    throw new Error(`ip addr add failed: ${added.stderr || String(added.error)}`)
  const rows: Row[] = []
  const dataDir = tempDir('bench-connector-')
  let upstream: ServerChild | undefined
  let platform: ServerChild | undefined
  try {
    upstream = await startServerChild('upstream', 'json-upstream.ts', { BENCH_UPSTREAM_HOST: ADDRESS })
    process.stderr.write('  starting platform...\n')
    platform = await startPlatformChild(dataDir, { CONNECTOR_HTTP_HOSTS: ADDRESS })
    const token = platform.info.token
    if (token === undefined) throw new Error('platform child reported no token')
    const base = `http://127.0.0.1:${String(platform.info.port)}`
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const created = await fetch(`${base}/api/v1/connectors`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        namespace: 'bench',
        name: 'crm',
        base_url: `http://${ADDRESS}:${String(upstream.info.port)}`,
        operations: [
          {
            name: 'get',
            method: 'GET',
            path: '/contacts/{id}',
            parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
            locations: { id: 'path' },
          },
        ],
      }),
    })
    if (created.status !== 201)
      throw new Error(`creating the connector: ${String(created.status)} ${await created.text()}`)
    const execUrl = `${base}/api/v1/connectors/bench/crm/operations/get/execute`
    const body = JSON.stringify({ input: { id: '42' } })
    const probe = await fetch(execUrl, { method: 'POST', headers: auth, body })
    if (probe.status !== 200) throw new Error(`execute answered ${String(probe.status)}: ${await probe.text()}`)

    process.stderr.write('  measuring the upstream directly\n')
    const direct = await measure({
      url: `http://${ADDRESS}:${String(upstream.info.port)}/contacts/42`,
      pid: upstream.pid,
    })
    rows.push({ benchmark: NAME, case: 'GET upstream directly', baseline: true, ...direct })
    const helpers = [...childPids(platform.pid), upstream.pid]
    process.stderr.write('  measuring the resource read alone\n')
    const read = await measure({
      url: `${base}/api/v1/connectors/bench/crm`,
      headers: auth,
      pid: platform.pid,
      helperPids: helpers,
    })
    rows.push({
      benchmark: NAME,
      case: 'GET /api/v1/connectors/bench/crm',
      ...read,
      note: 'the same route machinery and the one resource read an execute does, without the outbound call',
    })
    process.stderr.write('  measuring through the connector\n')
    const via = await measure({
      url: execUrl,
      method: 'POST',
      headers: auth,
      body,
      pid: platform.pid,
      helperPids: helpers,
    })
    rows.push({
      benchmark: NAME,
      case: 'POST …/operations/get/execute',
      ...via,
      note: 'CPU: the platform process (gateway + service + guarded client); other: nats-server, Postgres and the upstream',
    })

    // The target (≤ 1 ms added at p50) is about the latency one caller sees: one request at a time.
    process.stderr.write('  one request at a time: the upstream directly\n')
    const directOne = await measureSequential({
      url: `http://${ADDRESS}:${String(upstream.info.port)}/contacts/42`,
      pid: upstream.pid,
    })
    const DIRECT_ONE = 'GET upstream directly, one at a time'
    rows.push({ benchmark: NAME, case: DIRECT_ONE, ...directOne })
    process.stderr.write('  one request at a time: through the connector\n')
    const viaOne = await measureSequential({
      url: execUrl,
      method: 'POST',
      headers: auth,
      body,
      pid: platform.pid,
      helperPids: helpers,
    })
    const added = viaOne.latencyP50Ms - directOne.latencyP50Ms
    rows.push({
      benchmark: NAME,
      case: 'POST …/operations/get/execute, one at a time',
      reference: DIRECT_ONE,
      ...viaOne,
      note: `p50 adds ${added.toFixed(3)} ms over the upstream directly (target ≤ 1 ms: ${added <= 1 ? 'ok' : 'OVER'}); one kept-alive connection, sub-ms percentiles (node:http client)`,
    })
  } finally {
    await platform?.stop()
    await upstream?.stop()
    removeTempDir(dataDir)
    spawnSync('ip', ['addr', 'del', `${ADDRESS}/32`, 'dev', 'lo'], { stdio: 'ignore' })
  }
  return rows
}

const bench: Benchmark = {
  name: NAME,
  description: 'connector call overhead: an operation through the platform vs the same GET on the upstream directly',
  run,
}
export default bench
