import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import t from 'tap'
import { isApiNotFound, isWrongLastSequence, kvKeys, publishDurably } from '../../src/platform/jetstream.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The shared JetStream/KV helpers against the real server: CAS conflicts and 404s are recognised
 * by the client's error class and the server's api error code, not by the wording of a message.
 */
t.test('errors classified by JetStreamApiError codes', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const nc = env.platform.nc
  const names = natsNames(env.config.NATS_PREFIX)
  const kv = await new Kvm(nc).create(names.bucket('HELPER_TEST'), { history: 1 })
  t.teardown(() => kv.destroy().then(() => undefined))

  const rev = await kv.create('k', 'a')
  await kv.update('k', 'b', rev)
  const stale = await kv.update('k', 'c', rev).then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(isWrongLastSequence(stale), 'a CAS update on a stale revision is a wrong-last-sequence conflict')
  const dup = await kv.create('k', 'd').then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(isWrongLastSequence(dup), 'a create of an existing key is one too')
  t.notOk(isWrongLastSequence(new Error('wrong last sequence: 3')), 'a plain error that only says so is not')
  t.notOk(isWrongLastSequence(undefined))

  const jsm = await jetstreamManager(nc)
  const missing = await jsm.consumers.delete(names.stream('DLQ'), 'no-such-consumer').then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(isApiNotFound(missing), 'deleting a consumer that does not exist is a 404')
  t.notOk(isWrongLastSequence(missing))
  t.notOk(isApiNotFound(stale))

  const ack = await publishDurably(jetstream(nc), names.subject('dlq.helper.test'), 'x', { msgID: 'helper-1' })
  const again = await publishDurably(jetstream(nc), names.subject('dlq.helper.test'), 'x', { msgID: 'helper-1' })
  t.equal(again.duplicate, true, 'the same msgID is stored once')
  t.equal(again.seq, ack.seq)
})

t.test('kvKeys: the keys a bucket stores, from one stream info, while entries expire', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const nc = env.platform.nc
  const names = natsNames(env.config.NATS_PREFIX)
  // a TTL like WORKERS' and ACTOR_LEASES': entries that stop being written expire
  const kv = await new Kvm(nc).create(names.bucket('KEYS_TEST'), { history: 1, ttl: 1_000 })
  t.teardown(() => kv.destroy().then(() => undefined))
  for (const k of ['fn.a', 'fn.b', 'fn.c', 'agent.a']) await kv.put(k, 'x')
  await kv.delete('fn.c')
  t.same((await kvKeys(kv, 'fn.>')).sort(), ['fn.a', 'fn.b', 'fn.c'], "a role's keys; a deleted key's marker is listed")
  t.same((await kvKeys(kv)).sort(), ['agent.a', 'fn.a', 'fn.b', 'fn.c'])
  t.same(await kvKeys(kv, 'none.>'), [])

  // One key kept alive while short-lived ones expire under the listings: every listing ends and
  // has the live key. (nats.js's kv.keys() hung here on nats-server 2.9 now and then: an entry that
  // expired after its ordered consumer counted it never arrived.)
  const beat = setInterval(() => void kv.put('fn.live', 'x'), 200)
  t.teardown(() => clearInterval(beat))
  await kv.put('fn.live', 'x')
  let short = 0
  const listings: number[] = []
  for (let i = 0; i < 40; i++) {
    if (i < 20) await kv.put(`fn.short${String(short++)}`, 'x')
    const keys = await kvKeys(kv, 'fn.>')
    listings.push(keys.length)
    if (!keys.includes('fn.live')) t.fail(`listing ${String(i)} misses the live key: ${keys.join(',')}`)
    await new Promise((r) => setTimeout(r, 75))
  }
  t.equal(listings.length, 40, 'every listing ended')
  const jsm = await jetstreamManager(nc)
  const consumers = []
  for await (const c of jsm.consumers.list(`KV_${names.bucket('KEYS_TEST')}`)) consumers.push(c.name)
  t.same(consumers, [], 'no consumer was created for a listing')
})
