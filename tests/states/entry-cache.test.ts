import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadPrincipal } from '../../src/auth/principal.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { storeKind } from '../../src/kinds/store/kind.ts'
import { startNats } from '../../src/platform/local-services.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { natsStateCache, stateCacheFor } from '../../src/states/entry-cache.ts'
import { createStateService } from '../../src/states/service.ts'
import { spawnReady } from '../helpers/child.ts'
import { eventually } from '../helpers/eventually.ts'
import { ENCRYPTION_KEY, SECRET_KEY, startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * State reads come from each process's entry cache (src/states/entry-cache.ts), kept coherent over
 * NATS. The store routes are served here by three resources processes (the test platform and two
 * children), so a write lands on one and the reads after it on any: each must see the write
 * before it — a changed value, a created key that was absent, a deleted key, a deleted owner —
 * and an entry that expires stops being answered with no write at all. Then, on one process: an
 * encrypted store's values are held as ciphertext only, the cache keeps to its byte budget, a
 * grant taken away counts on the next read, and nothing held before a NATS outage is answered after
 * it (the outage's changes never arrived).
 */
const SERVICE = join(import.meta.dirname, '..', 'resources', 'service-process.ts')
type Entry = { key: string; value: unknown; owner_id: string | null }

async function threeProcesses(t: Parameters<typeof startTestPlatform>[0]): Promise<TestPlatform> {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources', RPC_IN_PROCESS: 'false' })
  const childEnv = {
    NATS_URL: env.config.NATS_URL,
    NATS_PREFIX: env.config.NATS_PREFIX,
    DATABASE_URL: env.databaseUrl,
    SECRET_KEY,
    ENCRYPTION_KEY,
    DATA_DIR: env.config.DATA_DIR,
  }
  await Promise.all([spawnReady(t, SERVICE, childEnv), spawnReady(t, SERVICE, childEnv)])
  return env
}

t.test('a state write is visible to the next read in every process (read-your-writes across processes)', async (t) => {
  const env = await threeProcesses(t)
  t.equal((await env.request('POST', '/api/v1/stores', { body: { namespace: 'sc', name: 'kv' } })).status, 201)
  const base = '/stores/sc/kv/states'
  t.equal((await env.request('POST', base, { body: { key: 'k', value: 0 } })).status, 201)
  for (let i = 0; i < 30; i++) t.equal((await env.request('GET', `${base}/k`)).status, 200) // warm every process

  let stale = 0
  for (let i = 1; i <= 60; i++) {
    const put = await env.request('PUT', `${base}/k`, { body: { value: i } })
    if (put.status !== 200) t.fail(`PUT ${String(i)}: ${put.text}`)
    for (let r = 0; r < 3; r++) if (((await env.request('GET', `${base}/k`)).body as Entry).value !== i) stale++
  }
  t.equal(stale, 0, 'no read saw an older value than the write before it')

  // the same on an encrypted store (its value decrypted per read, the rest of the answer kept rendered)
  t.equal(
    (await env.request('POST', '/api/v1/stores', { body: { namespace: 'sc', name: 'vault', encrypted: true } })).status,
    201,
  )
  t.equal((await env.request('POST', '/stores/sc/vault/states', { body: { key: 'k', value: 0 } })).status, 201)
  for (let i = 0; i < 30; i++) t.equal((await env.request('GET', '/stores/sc/vault/states/k')).status, 200)
  let staleSealed = 0
  for (let i = 1; i <= 20; i++) {
    const put = await env.request('PUT', '/stores/sc/vault/states/k', {
      body: { value: { i }, tags: [`t${String(i)}`] },
    })
    if (put.status !== 200) t.fail(`PUT ${String(i)}: ${put.text}`)
    for (let r = 0; r < 3; r++) {
      const got = (await env.request('GET', '/stores/sc/vault/states/k')).body as Entry & { tags: string[] }
      if ((got.value as { i?: number }).i !== i || got.tags[0] !== `t${String(i)}`) staleSealed++
    }
  }
  t.equal(staleSealed, 0, 'encrypted store: no read saw an older value or tags than the write before it')

  let wrong = 0
  for (let i = 0; i < 15; i++) {
    const path = `${base}/n${String(i)}`
    // every process learns the key is absent first (absent keys are held too)
    for (let r = 0; r < 3; r++) if ((await env.request('GET', path)).status !== 404) wrong++
    t.equal((await env.request('POST', base, { body: { key: `n${String(i)}`, value: i } })).status, 201)
    for (let r = 0; r < 3; r++) if ((await env.request('GET', path)).status !== 200) wrong++
    t.equal((await env.request('DELETE', path)).status, 204)
    for (let r = 0; r < 3; r++) if ((await env.request('GET', path)).status !== 404) wrong++
  }
  t.equal(wrong, 0, 'a created key is found at once, a deleted one gone at once, whichever process answers')

  // expiry needs no write: every process checks it when it answers from memory
  const expires = Date.now() + 1500
  t.equal(
    (
      await env.request('PUT', `${base}/brief`, {
        body: { value: 'soon gone', expires_at: new Date(expires).toISOString() },
      })
    ).status,
    201,
  )
  for (let r = 0; r < 6; r++) t.equal((await env.request('GET', `${base}/brief`)).status, 200, 'live before it expires')
  await new Promise((r) => setTimeout(r, Math.max(0, expires - Date.now()) + 50))
  for (let r = 0; r < 6; r++)
    t.equal((await env.request('GET', `${base}/brief`)).status, 404, 'expired: answered by no process')
})

t.test("deleting a user clears the owner of its entries in every process's copy", async (t) => {
  const env = await threeProcesses(t)
  const x = await env.createUser('states-owner@test.local')
  t.equal(
    (await env.request('POST', '/api/v1/stores', { token: x.token, body: { namespace: 'own', name: 'notes' } })).status,
    201,
  )
  t.equal(
    (await env.request('POST', '/stores/own/notes/states', { token: x.token, body: { key: 'k', value: 1 } })).status,
    201,
  )
  for (let r = 0; r < 6; r++)
    t.equal(
      ((await env.request('GET', '/stores/own/notes/states/k')).body as Entry).owner_id,
      x.id,
      'the admin reads it, owned by x',
    )
  t.equal((await env.request('DELETE', `/api/v1/users/${x.id}`)).status, 204)
  for (let r = 0; r < 6; r++)
    t.equal(
      ((await env.request('GET', '/stores/own/notes/states/k')).body as Entry).owner_id,
      null,
      'its owner is gone everywhere',
    )
})

t.test('one process: ciphertext only for encrypted stores, and the byte budget', async (t) => {
  const env = await startTestPlatform(t)
  const { db, resources, nc } = env.platform
  if (db === undefined || resources === undefined) throw new Error('no service role')
  const admin = await loadPrincipal(db, { sub: env.adminId, via: 'jwt' })
  const states = createStateService({ db, config: env.config, resources })
  t.equal(
    (await env.request('POST', '/api/v1/stores', { body: { namespace: 'sc', name: 'vault', encrypted: true } })).status,
    201,
  )
  t.equal((await env.request('POST', '/api/v1/stores', { body: { namespace: 'sc', name: 'many' } })).status, 201)
  const marker = 'clear-marker-51c9'
  t.equal(
    (await env.request('POST', '/stores/sc/vault/states', { body: { key: 'card', value: { n: marker } } })).status,
    201,
  )
  t.match((await env.request('GET', '/stores/sc/vault/states/card')).body, { value: { n: marker } }, 'read in clear')
  const [vault] = await resources.loadMany(storeKind, ['sc/vault'])
  if (vault === undefined) throw new Error('no vault')
  // the platform's own cache (one per database pool): what it holds for the key
  const shared = stateCacheFor(db, { maxBytes: env.config.STATE_CACHE_BYTES })
  const held = await shared.row(vault.id, 'card')
  t.equal(held?.text, null, 'no clear value held')
  t.match(held?.value_sealed, /^v1:/, 'the ciphertext')
  t.notMatch(JSON.stringify(held), new RegExp(marker), 'the plaintext is nowhere in what is held')
  // the route's answer is the entry's JSON exactly, for an encrypted store and a plain one
  const vaultRef = { namespace: 'sc', name: 'vault' }
  const sealedAnswer = Buffer.from(await states.getJson(admin, vaultRef, 'card')).toString('utf8')
  t.equal(sealedAnswer, JSON.stringify(await states.get(admin, vaultRef, 'card')), 'encrypted: the answer is the entry')
  t.equal(
    (await env.request('GET', '/stores/sc/vault/states/card')).text,
    sealedAnswer,
    'and the route sends those bytes',
  )

  const small = natsStateCache({ db, nc, names: natsNames(env.config.NATS_PREFIX), maxBytes: 32_768 })
  const [many] = await resources.loadMany(storeKind, ['sc/many'])
  if (many === undefined) throw new Error('no store')
  for (let i = 0; i < 150; i++)
    await states.put(admin, { namespace: 'sc', name: 'many' }, `k${String(i)}`, { value: { i, pad: 'p'.repeat(40) } })
  for (let i = 0; i < 150; i++) t.match(await small.row(many.id, `k${String(i)}`), { key: `k${String(i)}` })
  const manyRef = { namespace: 'sc', name: 'many' }
  for (const round of ['rendered', 'kept']) {
    const answer = Buffer.from(await states.getJson(admin, manyRef, 'k7')).toString('utf8')
    t.equal(answer, JSON.stringify(await states.get(admin, manyRef, 'k7')), `plain: the ${round} answer is the entry`)
    t.equal((await env.request('GET', '/stores/sc/many/states/k7')).text, answer, 'and the route sends those bytes')
  }
  const after = small.size()
  t.ok(after.bytes <= 32_768, `within the budget (${String(after.bytes)} bytes)`)
  t.ok(after.entries > 20 && after.entries < 150, `the least recently read went first (${String(after.entries)} held)`)
  t.ok((await small.row(many.id, 'k149')) !== null && small.size().entries === after.entries, 'the newest are held')
  await states.put(admin, { namespace: 'sc', name: 'many' }, 'big', { value: 'b'.repeat(2000) })
  t.match(await small.row(many.id, 'big'), { key: 'big' }, 'a value over 1/32 of the budget is read')
  t.equal(small.size().entries, after.entries, 'but not held')
})

t.test('a grant taken away is refused on the next state read (the store is opened per grant list)', async (t) => {
  const env = await startTestPlatform(t)
  t.equal(
    (
      await env.request('POST', '/api/v1/stores', {
        body: { namespace: 'g', name: 'kv', default_visibility: 'shared' },
      })
    ).status,
    201,
  )
  t.equal((await env.request('POST', '/stores/g/kv/states', { body: { key: 'k', value: 1 } })).status, 201)
  t.equal(
    (
      await env.request('POST', '/api/v1/roles', {
        body: { name: 'KvReaders', permissions: { 'platform.stores/g/kv.read_state:all': true } },
      })
    ).status,
    201,
  )
  const b = await env.createUser('states-reader@test.local', ['Users', 'KvReaders'])
  for (let r = 0; r < 3; r++)
    t.equal((await env.request('GET', '/stores/g/kv/states/k', { token: b.token })).status, 200, 'granted: read')
  t.equal((await env.request('PATCH', `/api/v1/users/${b.id}`, { body: { roles: ['Users'] } })).status, 200)
  t.equal(
    (await env.request('GET', '/stores/g/kv/states/k', { token: b.token })).status,
    404,
    'the grant is gone: the store is invisible at once',
  )
})

t.test(
  'what was held before a NATS outage is read again after it (changes published meanwhile never arrived)',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'nats-gap-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const log = createLogger({ level: 'silent' })
    let nats = await startNats({ dir, log })
    const port = Number(new URL(nats.url).port)
    t.teardown(() => nats.stop())
    const env = await startTestPlatform(t, { ROLES: 'gateway,resources', NATS_URL: nats.url })
    t.equal((await env.request('POST', '/api/v1/stores', { body: { namespace: 'gap', name: 'kv' } })).status, 201)
    t.equal((await env.request('POST', '/stores/gap/kv/states', { body: { key: 'k', value: 'before' } })).status, 201)
    for (let r = 0; r < 3; r++)
      t.equal(((await env.request('GET', '/stores/gap/kv/states/k')).body as Entry).value, 'before', 'held')
    process.kill(nats.pid, 'SIGKILL')
    // a write whose announcement is lost: another process changed the entry while NATS was down
    await env.sql(`update states set value = '"after"'::jsonb where key = 'k'`, [], { behindTheBack: true })
    nats = await startNats({ dir, port, log })
    const value = await eventually(async () => {
      const res = await env.request('GET', '/stores/gap/kv/states/k')
      return res.status === 200 ? (res.body as Entry).value : undefined
    }, 'the platform to answer again after the NATS restart')
    t.equal(value, 'after', 'the entry is read again, not answered from before the outage')
  },
)
