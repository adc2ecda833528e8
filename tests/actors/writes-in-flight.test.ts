import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { sendToActor } from '../../actors/runtime/send.ts'
import { kill9, spawnReady } from '../helpers/child.ts'
import { eventually } from '../helpers/eventually.ts'
import { type CounterState } from './counter-actor.ts'
import { startActorTestbed } from './testbed.ts'
import { counterProtocol } from './counter-protocol.ts'
import { leaseOwners } from '../helpers/lease-owners.ts'

/*
 * Many keys with state writes in flight together (the host's writes go out as core publishes
 * batched per event-loop turn, actors/runtime/state-writer.ts and outbox.ts), and a host killed
 * -9 in the middle of them: every key ends with all its messages applied once, in order — nothing
 * lost (no gap, `last` reached), nothing doubled (`applied` equals the message count; messages
 * redelivered after their write had landed are seen as duplicates and change nothing).
 */
const HOST = join(import.meta.dirname, 'host-process.ts')
const LEASE_TTL_MS = 3000
const KEYS = 80
const PER_KEY = 25

t.test('a host killed with many state writes in flight loses nothing and doubles nothing', async (t) => {
  const { env, names, js, leases, states } = await startActorTestbed(t, LEASE_TTL_MS)
  const hosts = new Map<string, ChildProcess>()
  for (const id of ['host-a', 'host-b']) {
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
  const initial = await eventually(
    async () => {
      const o = await owners()
      return o.size === 16 && new Set(o.values()).size === 2 ? o : undefined
    },
    'both hosts to own partitions',
    30_000,
  )
  const counts = new Map<string, number>()
  for (const h of initial.values()) counts.set(h, (counts.get(h) ?? 0) + 1)
  const victim = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] as string

  // every key's messages sent one after another, all keys at once: writes of many keys in flight
  const keys = Array.from({ length: KEYS }, (_, i) => `w${String(i)}`)
  const sending = Promise.all(
    keys.map(async (key) => {
      for (let n = 1; n <= PER_KEY; n++)
        await sendToActor(js, names, counterProtocol, key, 'count', { n }, { msgId: `${key}-${String(n)}` })
    }),
  )
  // kill once the hosts are busy writing: some keys have state, none is finished
  await eventually(
    async () => {
      const runs = await env.sql<{ n: number }>('select count(*)::int as n from actor_runs')
      return (runs[0]?.n ?? 0) >= (KEYS * PER_KEY) / 5 ? true : undefined
    },
    'the hosts to be busy',
    30_000,
    5,
  )
  await kill9(hosts.get(victim) as ChildProcess)
  await sending

  let dups = 0
  for (const key of keys) {
    const s = await eventually(
      async () => {
        const e = await states.get(`counter.${key}`)
        const v = e === null || e.length === 0 ? undefined : e.json<{ state: CounterState }>().state
        return v !== undefined && v.last === PER_KEY ? v : undefined
      },
      `${key} to handle its ${String(PER_KEY)} messages`,
      60_000,
    )
    if (s.gaps !== 0) t.fail(`${key}: ${String(s.gaps)} gaps`)
    if (s.applied !== PER_KEY) t.fail(`${key}: applied ${String(s.applied)} times for ${String(PER_KEY)} messages`)
    dups += s.dups
  }
  t.pass(
    `${String(KEYS)} keys × ${String(PER_KEY)} messages: none lost, none applied twice, in order (${String(dups)} redeliveries recognised as duplicates)`,
  )
  const ran = await env.sql<{ n: number }>('select count(distinct (key, n))::int as n from actor_runs')
  t.same(ran, [{ n: KEYS * PER_KEY }], 'every message ran')
  const overlaps = await env.sql<{ n: number }>(`select count(*)::int as n from actor_runs a join actor_runs b
    on a.key = b.key and a.ctid < b.ctid and a.started_ms < b.ended_ms and b.started_ms < a.ended_ms`)
  t.same(overlaps, [{ n: 0 }], 'no two handler runs of one key overlapped, across the kill')
})
