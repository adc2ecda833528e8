import { randomBytes, randomUUID } from 'node:crypto'
import { createSecretBox, secretAad } from '../src/kernel/crypto.ts'
import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids } from './lib/cpu.ts'
import { expectOk, measure, type LoadTarget } from './lib/load.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * A state read through the platform against the agent resource read of `gateway.bench.ts`, in one
 * platform process (ROLES=all, its own nats-server and Postgres):
 *   baseline    GET /api/v1/agents/default/default           one resource row
 *   state       GET /stores/bench/kv/states/{key}             the store's row + the entry's row, both from
 *                                                             memory, the answer's bytes rendered once per row
 *   encrypted   the same on a store with `encrypted: true`    + AES-256-GCM open of the value per read (its
 *                                                             plaintext is never kept: only the rest is rendered)
 *   PUT         a write of the plain entry, for reference         the update + the entry cache's announcement
 * The value is a small JSON object (about 200 bytes). The encrypted row's note gives the CPU of one
 * AES-256-GCM open of the same value (src/kernel/crypto.ts, in this process): the part of the
 * encrypted read that keeping ciphertext costs.
 */
const OPENS = 20_000

/** CPU µs of one `SecretBox.decrypt` of `value`'s JSON, as the state service opens it. */
function openCost(value: unknown): number {
  const box = createSecretBox(randomBytes(32).toString('base64'))
  const aad = secretAad('state', randomUUID(), 'customer:42')
  const sealed = box.encrypt(JSON.stringify(value), aad)
  for (let i = 0; i < 1000; i++) box.decrypt(sealed, aad)
  const t0 = process.cpuUsage()
  for (let i = 0; i < OPENS; i++) box.decrypt(sealed, aad)
  const t = process.cpuUsage(t0)
  return (t.user + t.system) / OPENS
}
const NAME = 'states'

async function run(): Promise<Row[]> {
  const rows: Row[] = []
  const dataDir = tempDir('bench-states-')
  let child: ServerChild | undefined
  try {
    process.stderr.write('  starting platform...\n')
    child = await startPlatformChild(dataDir)
    const { token } = child.info
    if (token === undefined) throw new Error('platform child reported no token')
    const base = `http://127.0.0.1:${String(child.info.port)}`
    const headers = { authorization: `Bearer ${token}` }
    const post = async (path: string, body: unknown) => {
      const r = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      if (r.status !== 201) throw new Error(`${path}: ${String(r.status)} ${await r.text()}`)
    }
    const value = { customer: 'ACME Corporation', tier: 'gold', tags: ['a', 'b', 'c'], notes: 'x'.repeat(120) }
    await post('/api/v1/stores', { namespace: 'bench', name: 'kv' })
    await post('/api/v1/stores', { namespace: 'bench', name: 'vault', encrypted: true })
    await post('/stores/bench/kv/states', { key: 'customer:42', value })
    await post('/stores/bench/vault/states', { key: 'customer:42', value })
    const pid = child.pid
    const helperPids = childPids(child.pid)
    const load = async (label: string, target: LoadTarget, extra: Partial<Row> = {}) => {
      process.stderr.write(`  measuring ${label}\n`)
      await expectOk(target.url, target.headers)
      rows.push({ benchmark: NAME, case: label, ...(await measure(target)), ...extra })
    }
    await load(
      'GET /api/v1/agents/default/default (resource read)',
      { url: `${base}/api/v1/agents/default/default`, headers, pid, helperPids },
      { baseline: true, note: 'CPU is the whole platform process (gateway + service)' },
    )
    // target (issue 14): a state read costs no more than the resource read, in CPU and in req/s
    const target = { limit: 1, rpsLimit: 1 }
    await load(
      'GET /stores/bench/kv/states/customer:42',
      { url: `${base}/stores/bench/kv/states/customer:42`, headers, pid, helperPids },
      target,
    )
    await load(
      'GET /stores/bench/vault/states/customer:42 (encrypted)',
      { url: `${base}/stores/bench/vault/states/customer:42`, headers, pid, helperPids },
      {
        ...target,
        note: `one AES-256-GCM open of this value: ${openCost(value).toFixed(1)} µs CPU (${String(OPENS)} opens in the bench process); the value is decrypted per read, never kept in clear (docs/security.md)`,
      },
    )
    // a write for reference (no target): the update's commit, then the cache's `states.changed` publish and flush
    const put = {
      url: `${base}/stores/bench/kv/states/customer:42`,
      method: 'PUT',
      body: JSON.stringify({ value }),
      headers: { ...headers, 'content-type': 'application/json' },
      pid,
      helperPids,
    }
    process.stderr.write('  measuring PUT\n')
    rows.push({
      benchmark: NAME,
      case: 'PUT /stores/bench/kv/states/customer:42 (one key, 50 connections)',
      ...(await measure(put)),
      note: 'for reference: every write updates the same row',
    })
  } finally {
    await child?.stop()
    removeTempDir(dataDir)
  }
  return rows
}

const bench: Benchmark = {
  name: NAME,
  description: 'a state read (plain and encrypted store) vs the agent resource read, in one platform process',
  run,
}
export default bench
