import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { jetstreamManager } from '@nats-io/jetstream'
import t from 'tap'
import { fnv1a32, partitionOf, rendezvousOwner } from '../../actors/runtime/hash.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import { kill9, spawnReady, terminate } from '../helpers/child.ts'
import { eventually } from '../helpers/eventually.ts'
import { type CounterState } from './counter-actor.ts'
import { startActorTestbed } from './testbed.ts'
import { counterProtocol } from './counter-protocol.ts'
import { leaseOwners } from '../helpers/lease-owners.ts'

/*
 * The actor runtime with real host processes on the real nats-server: one writer per key, per-key
 * order, takeover of a kill -9'd host's partitions with no message lost, hand-off to a joining
 * host and from a stopping one, the DLQ for poison messages, timers.
 */
const HOST = join(import.meta.dirname, 'host-process.ts')
const LEASE_TTL_MS = 3000

t.test('partition and owner hashing', async (t) => {
  // FNV-1a mod 8, as nats-server's {{partition(8,…)}} maps them.
  t.same(
    ['chat-1', 'chat-2', 'abc', 'a1b2c3'].map((k) => fnv1a32(k) % 8),
    [1, 0, 3, 5],
  )
  t.equal(partitionOf('abc', 8), 3)
  const hosts = ['host-a', 'host-b', 'host-c']
  const share = new Map<string, number>()
  const orderDependent: number[] = []
  for (let p = 0; p < 64; p++) {
    const owner = rendezvousOwner(hosts, 'chat', p) as string
    share.set(owner, (share.get(owner) ?? 0) + 1)
    if (rendezvousOwner([...hosts].reverse(), 'chat', p) !== owner) orderDependent.push(p)
  }
  t.same(orderDependent, [], 'the owner does not depend on the order of the host list')
  t.ok(
    [...share.values()].every((n) => n >= 12),
    `balanced: ${JSON.stringify(Object.fromEntries(share))}`,
  )
  // A leaving host moves only its own partitions.
  let moved = 0
  for (let p = 0; p < 64; p++)
    if (
      rendezvousOwner(hosts, 'chat', p) !== 'host-c' &&
      rendezvousOwner(['host-a', 'host-b'], 'chat', p) !== rendezvousOwner(hosts, 'chat', p)
    )
      moved++
  t.equal(moved, 0)
})

t.test('hosts as processes: single writer, order, takeover, hand-off, DLQ, timers', async (t) => {
  const { env, names, nc, js, leases, states } = await startActorTestbed(t, LEASE_TTL_MS)
  const jsm0 = await jetstreamManager(nc)
  const hosts = new Map<string, ChildProcess>()
  const startHost = async (id: string) => {
    const { proc } = await spawnReady(t, HOST, {
      NATS_URL: env.config.NATS_URL,
      NATS_PREFIX: env.config.NATS_PREFIX,
      TEST_DATABASE_URL: env.databaseUrl,
      NODE_ID: id,
      LEASE_TTL_MS: String(LEASE_TTL_MS),
      ACK_WAIT_MS: '2000',
    })
    hosts.set(id, proc)
  }
  const owners = () => leaseOwners(leases)
  const state = async (key: string): Promise<CounterState | undefined> => {
    const e = await states.get(`counter.${key}`)
    return e === null || e.operation !== 'PUT' || e.length === 0 ? undefined : e.json<{ state: CounterState }>().state
  }
  const allOwnedBy = (ids: string[]) =>
    eventually(
      async () => {
        const o = await owners()
        return o.size === 16 && [...o.values()].every((h) => ids.includes(h)) ? o : undefined
      },
      `all 16 partitions owned by ${ids.join(', ')}`,
      30_000,
    )

  await t.rejects(
    sendToActor(js, names, counterProtocol, 'k1', 'count', { n: 0 }),
    { status: 422, code: 'actor.invalid_message' },
    'an invalid message is refused on send',
  )
  await t.rejects(sendToActor(js, names, counterProtocol, 'bad.key', 'count', { n: 1 }), { code: 'actor.bad_key' })

  for (const id of ['host-a', 'host-b', 'host-c']) await startHost(id)
  // The first host takes everything, then hands partitions to the others as they join.
  const initial = await eventually(
    async () => {
      const o = await owners()
      return o.size === 16 && new Set(o.values()).size === 3 ? o : undefined
    },
    'every host to get a share',
    30_000,
  )
  t.equal(new Set(initial.values()).size, 3, 'every host got a share')

  const keys = Array.from({ length: 24 }, (_, i) => `key-${String(i)}`)
  const send = (from: number, to: number) =>
    Promise.all(
      keys.map(async (key) => {
        for (let n = from; n <= to; n++)
          await sendToActor(js, names, counterProtocol, key, 'count', { n }, { msgId: `${key}-${String(n)}` })
      }),
    )
  await send(1, 10)

  // Kill the host owning the most partitions while messages keep coming.
  const counts = new Map<string, number>()
  for (const h of initial.values()) counts.set(h, (counts.get(h) ?? 0) + 1)
  const victim = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] as string
  const victimParts = [...initial.entries()].filter(([, h]) => h === victim).map(([p]) => p)
  const sending = send(11, 20)
  await kill9(hosts.get(victim) as ChildProcess)
  await sending
  const survivors = ['host-a', 'host-b', 'host-c'].filter((h) => h !== victim)
  const after = await allOwnedBy(survivors)
  t.ok(
    victimParts.every((p) => survivors.includes(after.get(p) as string)),
    `the killed host's ${String(victimParts.length)} partitions were taken over`,
  )

  for (const key of keys) {
    const s = await eventually(
      async () => {
        const v = await state(key)
        return v !== undefined && v.last === 20 ? v : undefined
      },
      `${key} to handle 20 messages`,
      60_000,
    )
    if (s.gaps !== 0) t.fail(`${key}: ${String(s.gaps)} gaps`)
  }
  t.pass(`all ${String(keys.length)} keys handled 20 messages each, in order`)
  const overlaps = await env.sql<{ n: number }>(`select count(*)::int as n from actor_runs a join actor_runs b
    on a.key = b.key and a.ctid < b.ctid and a.started_ms < b.ended_ms and b.started_ms < a.ended_ms`)
  t.same(overlaps, [{ n: 0 }], 'no two handler runs of one key overlapped, across hosts')
  const runs = await env.sql<{ n: number }>('select count(distinct (key, n))::int as n from actor_runs')
  t.same(runs, [{ n: 24 * 20 }], 'every message ran')

  // A joining host receives its share; a stopping host hands its partitions off.
  await startHost('host-d')
  const joined = await eventually(
    async () => {
      const o = await owners()
      return [...o.values()].includes('host-d') && o.size === 16 ? o : undefined
    },
    'host-d to own a share',
    30_000,
  )
  t.ok([...joined.values()].filter((h) => h === 'host-d').length >= 1)
  const leaving = survivors[0] as string
  await terminate(hosts.get(leaving) as ChildProcess)
  await allOwnedBy(['host-a', 'host-b', 'host-c', 'host-d'].filter((h) => h !== victim && h !== leaving))
  await send(21, 22)
  for (const key of keys) {
    const s = await eventually(
      async () => {
        const v = await state(key)
        return v !== undefined && v.last === 22 ? v : undefined
      },
      `${key} after the hand-off`,
      30_000,
    )
    if (s.gaps !== 0) t.fail(`${key}: ${String(s.gaps)} gaps after the hand-off`)
  }
  t.pass('every key handled its messages in order after the hand-off')

  // A burst to one key: handled in order, consecutive messages sharing state writes (one CAS per
  // drained batch, actors/runtime/mailbox.ts), still written before their messages are acked.
  const bucketSeq = async () => (await jsm0.streams.info(`KV_${names.bucket('ACTOR_STATE')}`)).state.last_seq
  const seq0 = await bucketSeq()
  await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      sendToActor(js, names, counterProtocol, 'burst', 'count', { n: i + 1 }, { msgId: `burst-${String(i + 1)}` }),
    ),
  )
  const burst = await eventually(
    async () => {
      const v = await state('burst')
      return v !== undefined && v.last === 200 ? v : undefined
    },
    'the burst to be handled',
    30_000,
  )
  t.equal(burst.gaps, 0, 'the burst was handled in order')
  const writes = (await bucketSeq()) - seq0
  t.ok(writes < 100, `200 messages to one key took ${String(writes)} state writes`)
  // A handler failing inside a batch: the messages before it are committed, it is retried in place,
  // the ones after it still run, in order, after it.
  await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      sendToActor(
        js,
        names,
        counterProtocol,
        'mixed',
        'count',
        { n: i + 1, ...(i + 1 === 15 ? { poison: true } : {}) },
        { msgId: `mixed-${String(i + 1)}` },
      ),
    ),
  )
  const mixed = await eventually(
    async () => {
      const v = await state('mixed')
      return v !== undefined && v.last === 30 ? v : undefined
    },
    'the batch around a failing handler to be handled',
    30_000,
  )
  t.equal(mixed.gaps, 1, 'only the failing message is missing from the sequence')
  const mixedRuns = await env.sql<{ n: number }>(
    "select count(distinct n)::int as n from actor_runs where key = 'mixed'",
  )
  t.same(mixedRuns, [{ n: 29 }], 'every other message of the batch ran')

  // Poison: a handler that always throws goes to the DLQ after 10 deliveries.
  await sendToActor(js, names, counterProtocol, 'poison', 'count', { n: 1, poison: true })
  const jsm = jsm0
  const dead = await eventually(
    async () =>
      (await jsm.streams
        .getMessage(names.stream('DLQ'), { last_by_subj: names.subject('dlq.actor.counter.poison') })
        .catch(() => null)) ?? undefined,
    'the poison message in the DLQ',
    30_000,
  )
  t.equal(dead.header.get('X-Attempts'), '11')
  t.match(dead.header.get('X-Error'), /10 deliveries/)

  // Timers: armed by a handler, fired by whichever host owns the key.
  await sendToActor(js, names, counterProtocol, 'timed', 'count', { n: 1, arm: true })
  const timed = await eventually(
    async () => ((await state('timed'))?.pinged === true ? true : undefined),
    'the timer to fire',
    20_000,
  )
  t.equal(timed, true)

  // A key its sender has just made (`fresh`) starts from the initial state without a read. A wrong
  // hint (the key holds state its host has not loaded) costs a CAS conflict and a redelivery,
  // after which the message runs on the stored state: nothing is replaced or lost.
  await sendToActor(js, names, counterProtocol, 'fresh-1', 'count', { n: 1 }, { fresh: true })
  const fresh = await eventually(
    async () => ((await state('fresh-1'))?.last === 1 ? state('fresh-1') : undefined),
    'the fresh key handled',
  )
  t.match(fresh, { last: 1, gaps: 0, applied: 1 })
  await states.put(
    'counter.stored-1',
    JSON.stringify({ state: { last: 5, gaps: 0, pinged: false, applied: 5, dups: 0 }, timers: {} }),
  )
  await sendToActor(js, names, counterProtocol, 'stored-1', 'count', { n: 6 }, { fresh: true })
  const kept = await eventually(
    async () => ((await state('stored-1'))?.last === 6 ? state('stored-1') : undefined),
    'the wrongly fresh key handled',
  )
  t.match(kept, { last: 6, gaps: 0, applied: 6 }, 'the stored state moved on, not replaced by the initial one')
  const storedRuns = await env.sql<{ n: number }>("select count(*)::int as n from actor_runs where key = 'stored-1'")
  t.same(
    storedRuns,
    [{ n: 2 }],
    'the hint was taken (a run on the initial state, its write refused), then the redelivery ran on the stored state',
  )
})
