import {
  jetstream,
  jetstreamManager,
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { headers, createInbox } from '@nats-io/transport-node'
import { provisionActors } from '../actors/runtime/provision.ts'
import { createLogger } from '../src/kernel/log.ts'
import { startNats, type LocalService } from '../src/platform/local-services.ts'
import { connectNats, provisionNats, type NatsConnection } from '../src/platform/nats.ts'
import { natsNames } from '../src/platform/nats-names.ts'
import { removeTempDir, startServerChild, tempDir, type ServerChild } from './lib/children.ts'
import { clockTicks, processTicks } from './lib/cpu.ts'
import { natsServers, natsVersion, versionAtLeast } from './lib/nats-servers.ts'
import type { Benchmark, Row } from './lib/types.ts'
import { tallyProtocol } from './servers/tally-actor.ts'

/*
 * What the current nats-server offers, each feature against today's design, on one server ≥ 2.12
 * (NATS_SERVER_BIN when it is one, else the pinned current release: lib/nats-servers.ts), in one run:
 *
 *   ownership   partition ownership by a priority group with `pinned_client` (one consumer per
 *               partition, every host pulling with group `owner`; the server delivers to the pinned
 *               puller and moves the pin after `priority_timeout` without pulls) vs today's lease
 *               polling (the actor runtime's hosts, actors/runtime/leases.ts, TTL 3 s, tick 500 ms):
 *               takeover after kill -9 of the owning process (and once more with a message in
 *               flight on the dead owner), and the idle cost of keeping owners (the pinned owners
 *               pull every second: one that pulls less often than priority_timeout loses its pin);
 *   ttl         a KV write with a per-message TTL (`allow_msg_ttl`, header `Nats-TTL`) vs a write to
 *               a bucket with a TTL (max_age: the job state today), and vs a write and its explicit
 *               delete (a lease released today);
 *   batch       an atomic batch (`allow_atomic`; Nats-Batch-Id / -Sequence / -Commit) vs separate
 *               acked writes of the same messages, for steps of 2 writes and of 10;
 *   pause       pausing and resuming a consumer (`$JS.API.CONSUMER.PAUSE`) vs deleting and adding it
 *               again (the mailbox's replaceMailboxConsumer today), and the handover of a partition
 *               whose owner died holding unacked messages.
 * Feature rows carry `reference` (today's row), so the ratio columns compare them; the target column
 * carries the verdict (`even` within ±25 %). Scratch measurements behind the design choices here
 * (the pin moving from an idle owner, the batch's disk staging) are in bench/findings-log.md,
 * 2026-12-05. Settings: BENCH_FEATURES_WRITES (5000 per write case), BENCH_FEATURES_ROUNDS
 * (2 takeovers per design), BENCH_FEATURES_ONLY (comma-separated sections).
 */
const NAME = 'nats-features'
const WRITES = Number(process.env['BENCH_FEATURES_WRITES'] ?? 5000)
const ROUNDS = Number(process.env['BENCH_FEATURES_ROUNDS'] ?? 2)
const ONLY = (process.env['BENCH_FEATURES_ONLY'] ?? 'ownership,ttl,batch,pause').split(',').map((s) => s.trim())
const CONCURRENCY = 50
const OWNER_TTL_MS = 3000
const TICK_MS = 500
const IDLE_MS = 5000
const HANDOVER_ACK_WAIT_MS = 5000
// a pinned puller's pull requests: well inside priority_timeout, or an idle owner loses its pin
const PULL_EXPIRES_MS = 1000
const log = createLogger({ level: 'warn' })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const ticksUs = (ticks: number): number => (ticks / clockTicks()) * 1e6
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0
}
// the size of a job's state entry (about 420 bytes of JSON), as the queue bench writes
const PAYLOAD = JSON.stringify({ pad: 'x'.repeat(400) })

type Times = Pick<
  Row,
  'requests' | 'durationS' | 'rps' | 'cpuUsPerReq' | 'otherCpuUsPerReq' | 'latencyP50Ms' | 'latencyP99Ms' | 'errors'
>

/** `n` operations, CONCURRENCY in flight, after a tenth as many unmeasured: per-op latency, CPU of this process and of nats-server per op. */
async function timed(nats: LocalService, n: number, op: (i: number) => Promise<unknown>): Promise<Times> {
  const run = async (count: number, offset: number, lat: number[]) => {
    let next = 0
    let errors = 0
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, count) }, async () => {
        while (next < count) {
          const i = offset + next++
          const s = performance.now()
          try {
            await op(i)
          } catch (err) {
            if (errors++ === 0) process.stderr.write(`  first error: ${String(err)}\n`)
          }
          lat.push(performance.now() - s)
        }
      }),
    )
    return errors
  }
  await run(Math.ceil(n / 10), 1_000_000, [])
  const lat: number[] = []
  const cpu0 = process.cpuUsage()
  const srv0 = processTicks(nats.pid)
  const t0 = performance.now()
  const errors = await run(n, 0, lat)
  const s = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  return {
    requests: n,
    durationS: s,
    rps: n / s,
    cpuUsPerReq: (cpu.user + cpu.system) / n,
    otherCpuUsPerReq: ticksUs(processTicks(nats.pid) - srv0) / n,
    latencyP50Ms: pct(lat, 50),
    latencyP99Ms: pct(lat, 99),
    errors,
  }
}

/**
 * Two cases measured in alternation, two halves each in the order A B B A (a drift of the host's load
 * hits both alike), after both are warm: whichever runs first otherwise pays the compiler's warm-up.
 */
async function alternated(
  nats: LocalService,
  n: number,
  a: (i: number) => Promise<unknown>,
  b: (i: number) => Promise<unknown>,
): Promise<[Times, Times]> {
  const half = Math.ceil(n / 2)
  await timed(nats, half, (i) => a(i + 2_000_000))
  await timed(nats, half, (i) => b(i + 2_000_000))
  const a1 = await timed(nats, half, a)
  const b1 = await timed(nats, half, b)
  const b2 = await timed(nats, half, (i) => b(i + half))
  const a2 = await timed(nats, half, (i) => a(i + half))
  const merge = (x: Times, y: Times): Times => {
    const requests = x.requests + y.requests
    const durationS = x.durationS + y.durationS
    return {
      requests,
      durationS,
      rps: requests / durationS,
      cpuUsPerReq: (x.cpuUsPerReq * x.requests + y.cpuUsPerReq * y.requests) / requests,
      otherCpuUsPerReq: ((x.otherCpuUsPerReq ?? 0) * x.requests + (y.otherCpuUsPerReq ?? 0) * y.requests) / requests,
      latencyP50Ms: (x.latencyP50Ms + y.latencyP50Ms) / 2,
      latencyP99Ms: Math.max(x.latencyP99Ms, y.latencyP99Ms),
      errors: x.errors + y.errors,
    }
  }
  return [merge(a1, a2), merge(b1, b2)]
}

/** A row of rounds measured one at a time (takeovers, handovers): p50 / p99 = median / max in ms. */
function roundsRow(ms: number[], extra: Omit<Row, keyof Times | 'benchmark'>): Row {
  return {
    benchmark: NAME,
    requests: ms.length,
    durationS: ms.reduce((a, b) => a + b, 0) / 1000,
    rps: 0,
    cpuUsPerReq: 0,
    latencyP50Ms: pct(ms, 50),
    latencyP99Ms: Math.max(0, ...ms),
    errors: 0,
    ...extra,
  }
}

/**
 * The verdict on a feature: `gain` is how many times better than today's design it measured (>1:
 * better). Within ±25 % it is even: the spread of one case between runs on a loaded 2-vCPU host.
 */
const verdict = (gain: number, what: string): string =>
  `verdict: ${gain >= 1.25 ? 'WINS' : gain <= 0.8 ? 'LOSES' : 'even'} ×${gain.toFixed(2)} (${what})`

// ---------------------------------------------------------------------------------------------
// Ownership: pinned_client priority groups vs lease polling

async function ownershipLeases(nats: LocalService, nc: NatsConnection, jsm: JetStreamManager): Promise<Row[]> {
  const names = natsNames('bf')
  await provisionNats(nc, names, log)
  await provisionActors(nc, names, { leaseTtlMs: OWNER_TTL_MS })
  const leases = await new Kvm(nc).open(names.bucket('ACTOR_LEASES'))
  const leaseWrites = async () => (await jsm.streams.info(`KV_${names.bucket('ACTOR_LEASES')}`)).state.last_seq
  const owners = async () => {
    const out = new Map<string, string>()
    for await (const k of await leases.keys()) {
      const e = await leases.get(k)
      if (e !== null && e.operation === 'PUT' && e.length > 0) out.set(k, e.string())
    }
    return out
  }
  const hosts: { id: string; child: ServerChild }[] = []
  let nextHost = 0
  const startHost = async () => {
    const id = `h${String(nextHost++)}`
    const child = await startServerChild(id, 'actor-host.ts', {
      NATS_URL: nats.url,
      NATS_PREFIX: 'bf',
      NODE_ID: id,
      LEASE_TTL_MS: String(OWNER_TTL_MS),
      TICK_MS: String(TICK_MS),
    })
    hosts.push({ id, child })
  }
  try {
    for (let i = 0; i < 3; i++) await startHost()
    while ((await owners()).size < tallyProtocol.partitions || new Set((await owners()).values()).size < 3)
      await sleep(100)
    await sleep(2 * TICK_MS)
    const idle = await idleCost(
      nats,
      hosts.map((h) => h.child.pid),
      leaseWrites,
    )
    const takeovers: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const o = await owners()
      const counts = new Map<string, number>()
      for (const h of o.values()) counts.set(h, (counts.get(h) ?? 0) + 1)
      const victimId = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0]
      const victim = hosts.find((h) => h.id === victimId)
      if (victim === undefined) break
      const parts = [...o.entries()].filter(([, h]) => h === victimId).map(([p]) => p)
      const t0 = performance.now()
      process.kill(victim.child.pid, 'SIGKILL')
      hosts.splice(hosts.indexOf(victim), 1)
      for (;;) {
        const now = await owners()
        if (parts.every((p) => now.has(p) && now.get(p) !== victimId)) break
        // a live host that stops renewing and acquiring (its tick wedged) would leave them unowned for good
        if (performance.now() - t0 > 60_000)
          throw new Error(
            `takeover after kill -9 of ${String(victimId)} not done within 60 s: ${String(parts.filter((p) => !now.has(p) || now.get(p) === victimId).length)} of its ${String(parts.length)} partitions unowned; leases held: ${JSON.stringify(Object.fromEntries([...new Set(now.values())].map((h) => [h, [...now.values()].filter((x) => x === h).length])))}`,
          )
        await sleep(25)
      }
      takeovers.push(performance.now() - t0)
      await startHost()
      while ((await owners()).size < tallyProtocol.partitions) await sleep(100)
      await sleep(OWNER_TTL_MS)
    }
    return [
      roundsRow(takeovers, {
        case: `ownership: takeover after kill -9, lease polling (today; TTL ${String(OWNER_TTL_MS)} ms, tick ${String(TICK_MS)} ms)`,
        note: `${String(tallyProtocol.partitions)} partitions, 3 actor hosts; time until every partition of the killed host is leased by a live one (the mailbox starts right after): ${takeovers.map((t) => `${t.toFixed(0)} ms`).join(', ')}`,
      }),
      {
        benchmark: NAME,
        case: 'ownership: idle cost, lease polling (today)',
        ...idle.times,
        note: `per second with no messages: "CPU" = the 3 actor hosts (their whole runtime: leases, heartbeats, timers), "other" = nats-server, req/s = lease writes; ${idle.text}`,
      },
    ]
  } finally {
    for (const h of hosts) await h.child.stop().catch(() => undefined)
  }
}

/** CPU per second of wall time of `pids` and of nats-server over IDLE_MS, and writes per second of a counter. */
async function idleCost(
  nats: LocalService,
  pids: number[],
  writes: () => Promise<number>,
): Promise<{ times: Times; text: string }> {
  const p0 = pids.map((p) => processTicks(p))
  const n0 = processTicks(nats.pid)
  const w0 = await writes()
  await sleep(IDLE_MS)
  const w1 = await writes()
  const hostsUs = pids.reduce((sum, p, i) => sum + ticksUs(processTicks(p) - (p0[i] ?? 0)), 0) / (IDLE_MS / 1000)
  const natsUs = ticksUs(processTicks(nats.pid) - n0) / (IDLE_MS / 1000)
  const perS = (w1 - w0) / (IDLE_MS / 1000)
  return {
    times: {
      requests: w1 - w0,
      durationS: IDLE_MS / 1000,
      rps: perS,
      cpuUsPerReq: hostsUs,
      otherCpuUsPerReq: natsUs,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      errors: 0,
    },
    text: `hosts ${(hostsUs / 10_000).toFixed(1)} %, nats-server ${(natsUs / 10_000).toFixed(1)} % of a core, ${perS.toFixed(0)} server writes/s`,
  }
}

/** The pinned takeover with work in flight on the killed owner (its last round), for the verdict. */
let pinnedHeldTakeoverMs: number | undefined

async function ownershipPinned(nats: LocalService, nc: NatsConnection, jsm: JetStreamManager): Promise<Row[]> {
  const partitions = tallyProtocol.partitions
  await jsm.streams.add({
    name: 'PIN',
    subjects: ['pin.>'],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
  })
  for (let p = 0; p < partitions; p++)
    await jsm.consumers.add('PIN', {
      durable_name: `pin-p${String(p).padStart(3, '0')}`,
      filter_subject: `pin.${String(p)}.*`,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: HANDOVER_ACK_WAIT_MS * 1e6,
      max_ack_pending: 256,
      priority_groups: ['owner'],
      priority_policy: 'pinned_client',
      priority_timeout: OWNER_TTL_MS * 1e6,
    } satisfies Partial<ConsumerConfig>)
  const js = jetstream(nc)
  const seen = new Map<number, { host: string; at: number }[]>()
  const sub = nc.subscribe('pinbench.seen.>', {
    callback: (_err, m) => {
      const p = Number(m.subject.slice('pinbench.seen.'.length))
      const list = seen.get(p) ?? []
      list.push({ host: m.string(), at: performance.now() })
      seen.set(p, list)
    },
  })
  let probe = 0
  const sendProbe = (p: number) => js.publish(`pin.${String(p)}.k${String(probe++)}`, PAYLOAD)
  /** Who answers a probe of each partition sent now (waits for every answer). */
  const ownersNow = async (): Promise<Map<number, string>> => {
    const since = performance.now()
    await Promise.all(Array.from({ length: partitions }, (_, p) => sendProbe(p)))
    for (;;) {
      const out = new Map<number, string>()
      for (let p = 0; p < partitions; p++) {
        const got = (seen.get(p) ?? []).find((s) => s.at >= since)
        if (got !== undefined) out.set(p, got.host)
      }
      if (out.size === partitions) return out
      await sleep(20)
    }
  }
  const hosts: { id: string; child: ServerChild }[] = []
  let nextHost = 0
  const startHost = async () => {
    const id = `p${String(nextHost++)}`
    const child = await startServerChild(id, 'pinned-owner.ts', {
      NATS_URL: nats.url,
      NODE_ID: id,
      PARTITIONS: String(partitions),
      PULL_EXPIRES_MS: String(PULL_EXPIRES_MS),
    })
    hosts.push({ id, child })
  }
  try {
    for (let i = 0; i < 3; i++) await startHost()
    const first = await ownersNow()
    const spread = new Map<string, number>()
    for (const h of first.values()) spread.set(h, (spread.get(h) ?? 0) + 1)
    const idle = await idleCost(
      nats,
      hosts.map((h) => h.child.pid),
      async () => 0,
    )
    // did a pin move while nobody sent anything (an owner that pulls too seldom loses it)?
    const afterIdle = await ownersNow()
    const moved = [...afterIdle.entries()].filter(([p, h]) => first.get(p) !== h).length
    const takeovers: number[] = []
    let heldTakeover: number | undefined
    // the rounds, then one more with a message in flight (delivered, not acked) on each of the
    // victim's partitions when it dies
    for (let round = 0; round <= ROUNDS; round++) {
      const held = round === ROUNDS
      const o = await ownersNow()
      const counts = new Map<string, number>()
      for (const h of o.values()) counts.set(h, (counts.get(h) ?? 0) + 1)
      const victimId = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0]
      const victim = hosts.find((h) => h.id === victimId)
      if (victim === undefined) break
      const parts = [...o.entries()].filter(([, h]) => h === victimId).map(([p]) => p)
      if (held) {
        const since = performance.now()
        await Promise.all(parts.map((p) => js.publish(`pin.${String(p)}.hold${String(probe++)}`, PAYLOAD)))
        while (!parts.every((p) => (seen.get(p) ?? []).some((x) => x.at >= since && x.host === victimId)))
          await sleep(20)
      }
      const t0 = performance.now()
      process.kill(victim.child.pid, 'SIGKILL')
      hosts.splice(hosts.indexOf(victim), 1)
      // a probe to each of its partitions every 100 ms until one of every partition reached a live host
      const taken = new Set<number>()
      while (taken.size < parts.length) {
        await Promise.all(parts.filter((p) => !taken.has(p)).map((p) => sendProbe(p)))
        await sleep(100)
        for (const p of parts) if ((seen.get(p) ?? []).some((s) => s.at >= t0 && s.host !== victimId)) taken.add(p)
        if (performance.now() - t0 > 120_000) throw new Error('pinned takeover did not happen within 120 s')
      }
      const firstSeen = Math.max(
        ...parts.map((p) =>
          Math.min(...(seen.get(p) ?? []).filter((s) => s.at >= t0 && s.host !== victimId).map((s) => s.at)),
        ),
      )
      if (held) heldTakeover = pinnedHeldTakeoverMs = firstSeen - t0
      else takeovers.push(firstSeen - t0)
      await startHost()
      await sleep(1000)
    }
    return [
      roundsRow(takeovers, {
        case: `ownership: takeover after kill -9, priority group pinned_client (priority_timeout ${String(OWNER_TTL_MS)} ms)`,
        reference: `ownership: takeover after kill -9, lease polling (today; TTL ${String(OWNER_TTL_MS)} ms, tick ${String(TICK_MS)} ms)`,
        p50Limit: 1,
        note: `${String(partitions)} consumers, 3 processes each pulling all of them with group owner; time until a message sent after the kill to each of the killed owner's partitions reached a live process (probes every 100 ms): ${takeovers.map((t) => `${t.toFixed(0)} ms`).join(', ')}; with a message in flight on each (delivered, not acked; ack wait ${String(HANDOVER_ACK_WAIT_MS)} ms): ${heldTakeover === undefined ? '-' : `${heldTakeover.toFixed(0)} ms`}; the pins at the start: ${[...spread.values()].sort((a, b) => b - a).join(', ')} partitions per process; pins moved during ${String(IDLE_MS)} ms idle: ${String(moved)} (pulls expire after ${String(PULL_EXPIRES_MS)} ms)`,
      }),
      {
        benchmark: NAME,
        case: 'ownership: idle cost, priority group pinned_client',
        reference: 'ownership: idle cost, lease polling (today)',
        totalCpu: true,
        ...idle.times,
        note: `per second with no messages: "CPU" = the 3 processes (a pull request per consumer every ${String(PULL_EXPIRES_MS)} ms: ${String(Math.round((3 * partitions * 1000) / PULL_EXPIRES_MS))} a second), "other" = nats-server; ${idle.text}`,
      },
    ]
  } finally {
    sub.unsubscribe()
    for (const h of hosts) await h.child.stop().catch(() => undefined)
  }
}

// ---------------------------------------------------------------------------------------------
// Per-message TTL

async function ttlRows(nats: LocalService, nc: NatsConnection, jsm: JetStreamManager): Promise<Row[]> {
  const kvm = new Kvm(nc)
  const js = jetstream(nc)
  // today: the job state's bucket, a bucket-wide TTL (JOB_RESULT_TTL_HOURS)
  await kvm.create('FT_BUCKET', { history: 1, ttl: 3600_000, storage: StorageType.File })
  // the feature: allow_msg_ttl (and delete markers, so a watcher sees an expiry as it sees a delete)
  await kvm.create('FT_MSGTTL', { history: 1, markerTTL: 60_000, storage: StorageType.File })
  const leasesToday = await kvm.create('FT_LEASES', { history: 1, ttl: 3600_000, storage: StorageType.File })
  const rows: Row[] = []
  const today = 'ttl: KV put into a bucket with a TTL (max_age; the job state today)'
  const ttlPut = (i: number, prefix: string) =>
    js.publish(`$KV.FT_MSGTTL.${prefix}${String(i)}`, PAYLOAD, { ttl: '3600s' })
  // both as kv.put sends a write (a publish to the entry's subject), the header the only difference
  const [plain, feature] = await alternated(
    nats,
    WRITES,
    (i) => js.publish(`$KV.FT_BUCKET.k${String(i)}`, PAYLOAD),
    (i) => ttlPut(i, 'a'),
  )
  rows.push({ benchmark: NAME, case: today, ...plain })
  rows.push({
    benchmark: NAME,
    case: 'ttl: KV put with a per-message TTL (Nats-TTL, allow_msg_ttl)',
    reference: today,
    totalCpu: true,
    rpsLimit: 1,
    ...feature,
    checks: [
      verdict(
        feature.rps / (rows[0]?.rps ?? 1),
        'writes/s; the header saves nothing on the write itself, only where an entry needs a lifetime of its own',
      ),
    ],
  })
  const deleteToday = 'ttl: KV create, then its CAS delete (a lease taken and released today)'
  const [twoWrites, once] = await alternated(
    nats,
    WRITES,
    async (i) => {
      const rev = await leasesToday.create(`k${String(i)}`, PAYLOAD)
      await leasesToday.delete(`k${String(i)}`, { previousSeq: rev })
    },
    (i) => ttlPut(i, 'b'),
  )
  rows.push({ benchmark: NAME, case: deleteToday, ...twoWrites })
  const ratio = once.rps / (rows[2]?.rps ?? 1)
  rows.push({
    benchmark: NAME,
    case: 'ttl: KV put with a per-message TTL instead of the delete (the entry expires)',
    reference: deleteToday,
    totalCpu: true,
    rpsLimit: 1,
    ...once,
    checks: [
      verdict(
        ratio,
        'items/s: one write instead of two where an entry may simply lapse; not a lease, whose release others must see at once',
      ),
    ],
  })
  // the expiry itself: server CPU to expire WRITES entries, bucket max_age vs per-message TTL
  const expiry = async (make: (i: number) => Promise<unknown>, stream: string): Promise<string> => {
    await Promise.all(Array.from({ length: WRITES }, (_, i) => make(i)))
    const n0 = processTicks(nats.pid)
    const t0 = performance.now()
    while ((await jsm.streams.info(stream)).state.messages > 0 && performance.now() - t0 < 20_000) await sleep(100)
    const ms = performance.now() - t0
    return `${ticksUs(processTicks(nats.pid) - n0) / WRITES < 0.05 ? '~0' : (ticksUs(processTicks(nats.pid) - n0) / WRITES).toFixed(1)} µs of nats-server per expired entry, all gone ${(ms / 1000).toFixed(1)} s after the writes`
  }
  const shortBucket = await kvm.create('FT_SHORT', { history: 1, ttl: 2000, storage: StorageType.File })
  await kvm.create('FT_SHORTMSG', { history: 1, markerTTL: 1000, storage: StorageType.File })
  const byBucket = await expiry((i) => shortBucket.put(`k${String(i)}`, PAYLOAD), 'KV_FT_SHORT')
  const byMsg = await expiry(
    (i) => js.publish(`$KV.FT_SHORTMSG.k${String(i)}`, PAYLOAD, { ttl: '2s' }),
    'KV_FT_SHORTMSG',
  )
  const first = rows[0]
  if (first !== undefined)
    first.note = `expiry of ${String(WRITES)} entries written with a 2 s lifetime: bucket max_age ${byBucket}; per-message TTL (with delete markers) ${byMsg}`
  return rows
}

// ---------------------------------------------------------------------------------------------
// Atomic batch publish

async function batchRows(nats: LocalService, nc: NatsConnection, jsm: JetStreamManager): Promise<Row[]> {
  await jsm.streams.add({
    name: 'FT_ATOMIC',
    subjects: ['atom.>'],
    storage: StorageType.File,
    allow_atomic: true,
  })
  const js: JetStreamClient = jetstream(nc)
  const rows: Row[] = []
  // an atomic batch on a file stream is staged on disk and synced at its commit (strace: a directory,
  // files, an fsync and a rename per batch), so it runs at the disk's pace: fewer steps per case
  const steps = Math.max(200, Math.floor(WRITES / 5))
  const two = 'batch: 2 acked writes one after the other (today: e.g. a record, then the message it announces)'
  rows.push({
    benchmark: NAME,
    case: two,
    ...(await timed(nats, steps, async (i) => {
      await js.publish(`atom.job.${String(i)}`, PAYLOAD)
      await js.publish(`atom.state.${String(i)}`, PAYLOAD)
    })),
  })
  const twoPar = 'batch: 2 acked writes in parallel (today, when the order does not matter)'
  rows.push({
    benchmark: NAME,
    case: twoPar,
    reference: two,
    ...(await timed(nats, steps, (i) =>
      Promise.all([js.publish(`atom.job.${String(i)}`, PAYLOAD), js.publish(`atom.state.${String(i)}`, PAYLOAD)]),
    )),
  })
  const batch2 = await timed(nats, steps, async (i) => {
    const b = await js.startBatch(`atom.job.${String(i)}`, PAYLOAD)
    await b.commit(`atom.state.${String(i)}`, PAYLOAD)
  })
  rows.push({
    benchmark: NAME,
    case: 'batch: atomic batch of 2 (the client: startBatch waits for the first message, then commit)',
    reference: two,
    totalCpu: true,
    rpsLimit: 1,
    ...batch2,
  })
  // the protocol by hand: the first message published (its reply unread), the commit a request
  const raw = async (msgs: number, i: number, prefix = 'atom') => {
    const id = `b${String(i)}-${String(msgs)}-${String(performance.now())}`
    const inbox = createInbox()
    for (let s = 1; s < msgs; s++) {
      const h = headers()
      h.set('Nats-Batch-Id', id)
      h.set('Nats-Batch-Sequence', String(s))
      nc.publish(`${prefix}.m${String(s)}.${String(i)}`, PAYLOAD, { headers: h, ...(s === 1 ? { reply: inbox } : {}) })
    }
    const h = headers()
    h.set('Nats-Batch-Id', id)
    h.set('Nats-Batch-Sequence', String(msgs))
    h.set('Nats-Batch-Commit', '1')
    const r = await nc.request(`${prefix}.m${String(msgs)}.${String(i)}`, PAYLOAD, { headers: h, timeout: 5000 })
    const ack = r.json<{ error?: { description: string }; count?: number }>()
    if (ack.error !== undefined || ack.count !== msgs) throw new Error(JSON.stringify(ack))
  }
  const raw2 = await timed(nats, steps, (i) => raw(2, i))
  const vsSeq = raw2.rps / (rows[0]?.rps ?? 1)
  const vsPar = raw2.rps / (rows[1]?.rps ?? 1)
  rows.push({
    benchmark: NAME,
    case: 'batch: atomic batch of 2, by hand (one round trip: the commit)',
    reference: two,
    totalCpu: true,
    rpsLimit: 1,
    ...raw2,
    checks: [
      `${vsPar.toFixed(2)}× the parallel writes`,
      verdict(vsSeq, 'steps/s; on a file stream each batch is staged on disk and synced at its commit'),
    ],
  })
  const ten = 'batch: 10 acked writes in parallel (today: a step with 10 writes)'
  const steps10 = Math.max(100, Math.floor(WRITES / 10))
  rows.push({
    benchmark: NAME,
    case: ten,
    ...(await timed(nats, steps10, (i) =>
      Promise.all(Array.from({ length: 10 }, (_, k) => js.publish(`atom.t${String(k)}.${String(i)}`, PAYLOAD))),
    )),
  })
  const raw10 = await timed(nats, steps10, (i) => raw(10, i))
  rows.push({
    benchmark: NAME,
    case: 'batch: atomic batch of 10, by hand (one round trip: the commit)',
    reference: ten,
    totalCpu: true,
    rpsLimit: 1,
    ...raw10,
    checks: [verdict(raw10.rps / (rows[4]?.rps ?? 1), 'steps of 10 writes/s')],
  })
  // the same pair on a memory stream: what the batch costs without the disk staging
  await jsm.streams.add({
    name: 'FT_ATOMIC_MEM',
    subjects: ['matom.>'],
    storage: StorageType.Memory,
    allow_atomic: true,
  })
  const twoMem = 'batch: 2 acked writes one after the other, memory stream'
  rows.push({
    benchmark: NAME,
    case: twoMem,
    ...(await timed(nats, steps, async (i) => {
      await js.publish(`matom.job.${String(i)}`, PAYLOAD)
      await js.publish(`matom.state.${String(i)}`, PAYLOAD)
    })),
  })
  const rawMem = await timed(nats, steps, (i) => raw(2, i, 'matom'))
  rows.push({
    benchmark: NAME,
    case: 'batch: atomic batch of 2 by hand, memory stream',
    reference: twoMem,
    totalCpu: true,
    rpsLimit: 1,
    ...rawMem,
    checks: [
      verdict(
        rawMem.rps / (rows[6]?.rps ?? 1),
        'steps/s; not for the platform: its records live on file streams, a memory stream loses them on a restart',
      ),
    ],
  })
  return rows
}

// ---------------------------------------------------------------------------------------------
// Consumer pause

async function pauseRows(nats: LocalService, nc: NatsConnection, jsm: JetStreamManager): Promise<Row[]> {
  await jsm.streams.add({
    name: 'FT_PAUSE',
    subjects: ['fp.>'],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
  })
  // the mailbox consumer's settings (actors/runtime/mailbox.ts), ack wait shortened for the handover rounds
  const config = (p: number): Partial<ConsumerConfig> => ({
    durable_name: `fp-p${String(p)}`,
    filter_subject: `fp.${String(p)}.*`,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_deliver: -1,
    ack_wait: HANDOVER_ACK_WAIT_MS * 1e6,
    max_ack_pending: 256,
  })
  await jsm.consumers.add('FT_PAUSE', config(0))
  const rows: Row[] = []
  const ops = Math.max(50, Math.floor(WRITES / 25))
  const seq = async (f: () => Promise<unknown>): Promise<Times> => {
    const lat: number[] = []
    const cpu0 = process.cpuUsage()
    const n0 = processTicks(nats.pid)
    const t0 = performance.now()
    for (let i = 0; i < ops; i++) {
      const s = performance.now()
      await f()
      lat.push(performance.now() - s)
    }
    const s = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    return {
      requests: ops,
      durationS: s,
      rps: ops / s,
      cpuUsPerReq: (cpu.user + cpu.system) / ops,
      otherCpuUsPerReq: ticksUs(processTicks(nats.pid) - n0) / ops,
      latencyP50Ms: pct(lat, 50),
      latencyP99Ms: pct(lat, 99),
      errors: 0,
    }
  }
  const replace = 'pause: delete + add the consumer (today: replaceMailboxConsumer), one at a time'
  rows.push({
    benchmark: NAME,
    case: replace,
    ...(await seq(async () => {
      await jsm.consumers.delete('FT_PAUSE', 'fp-p0')
      await jsm.consumers.add('FT_PAUSE', config(0))
    })),
  })
  const pr = await seq(async () => {
    await jsm.consumers.pause('FT_PAUSE', 'fp-p0', new Date(Date.now() + 3600_000))
    await jsm.consumers.resume('FT_PAUSE', 'fp-p0')
  })
  rows.push({
    benchmark: NAME,
    case: 'pause: pause + resume the consumer, one at a time',
    reference: replace,
    totalCpu: true,
    p50Limit: 1,
    ...pr,
  })
  // Handover: the owner fetched 20 messages and died without acking them; time until the next owner
  // has all 20, with the consumer replaced (today) or kept (paused while ownerless, then resumed).
  const js = jetstream(nc)
  const handover = async (p: number, keep: boolean): Promise<number> => {
    await jsm.consumers.add('FT_PAUSE', config(p))
    await Promise.all(Array.from({ length: 20 }, (_, i) => js.publish(`fp.${String(p)}.k${String(i)}`, PAYLOAD)))
    const old = await connectNats(nats.url, 'bench-old-owner', log)
    const got = await (await jetstream(old).consumers.get('FT_PAUSE', `fp-p${String(p)}`)).fetch({ max_messages: 20 })
    let n = 0
    for await (const m of got) {
      void m
      if (++n === 20) break
    }
    await old.close()
    const t0 = performance.now()
    if (keep) {
      await jsm.consumers.pause('FT_PAUSE', `fp-p${String(p)}`, new Date(Date.now() + 3600_000))
      await jsm.consumers.resume('FT_PAUSE', `fp-p${String(p)}`)
    } else {
      await jsm.consumers.delete('FT_PAUSE', `fp-p${String(p)}`)
      await jsm.consumers.add('FT_PAUSE', config(p))
    }
    const msgs = await (await js.consumers.get('FT_PAUSE', `fp-p${String(p)}`)).consume({ max_messages: 64 })
    let have = 0
    for await (const m of msgs) {
      m.ack()
      if (++have === 20) break
    }
    const ms = performance.now() - t0
    await msgs.close()
    return ms
  }
  const today: number[] = []
  const kept: number[] = []
  for (let r = 0; r < 3; r++) {
    today.push(await handover(10 + 2 * r, false))
    kept.push(await handover(11 + 2 * r, true))
  }
  const handToday = 'pause: handover of a dead owner’s 20 unacked messages, consumer replaced (today)'
  rows.push(
    roundsRow(today, {
      case: handToday,
      note: `time until the next owner holds all 20 (ms): ${today.map((t) => t.toFixed(0)).join(', ')}`,
    }),
  )
  rows.push(
    roundsRow(kept, {
      case: 'pause: the same handover, consumer kept (paused while ownerless, then resumed)',
      reference: handToday,
      p50Limit: 1,
      checks: [
        verdict(
          pct(today, 50) / pct(kept, 50),
          `p50; a kept consumer redelivers the dead owner's messages only after the ack wait (${String(HANDOVER_ACK_WAIT_MS)} ms here)`,
        ),
      ],
      note: `time until the next owner holds all 20 (ms): ${kept.map((t) => t.toFixed(0)).join(', ')}; ack wait ${String(HANDOVER_ACK_WAIT_MS)} ms`,
    }),
  )
  const pauseRow = rows[1]
  if (pauseRow !== undefined) {
    pauseRow.checks = [
      verdict(
        (rows[0]?.latencyP50Ms ?? 0) / pauseRow.latencyP50Ms,
        "p50 of the API calls; a paused consumer keeps the dead owner's deliveries (the handover rows)",
      ),
    ]
  }
  return rows
}

// ---------------------------------------------------------------------------------------------

/** The server of this benchmark: NATS_SERVER_BIN when it is ≥ 2.12 (atomic batches), else the pinned current release. */
function featureServer(): string {
  const explicit = process.env['NATS_SERVER_BIN']
  if (explicit !== undefined && explicit !== '' && versionAtLeast(natsVersion(explicit), '2.12.0')) return explicit
  const current = natsServers('current')[0]
  if (current === undefined || !versionAtLeast(current.version, '2.12.0'))
    throw new Error('nats-features needs nats-server ≥ 2.12 (BENCH_NATS_CURRENT or NATS_SERVER_BIN)')
  return current.bin
}

async function run(): Promise<Row[]> {
  const bin = featureServer()
  const dir = tempDir('bench-features-')
  const saved = process.env['NATS_SERVER_BIN']
  process.env['NATS_SERVER_BIN'] = bin
  let nats: LocalService
  try {
    nats = await startNats({ dir: `${dir}/nats`, log })
  } finally {
    if (saved === undefined) delete process.env['NATS_SERVER_BIN']
    else process.env['NATS_SERVER_BIN'] = saved
  }
  const version = natsVersion(bin)
  process.stderr.write(`  nats-server ${version} (${bin})\n`)
  const rows: Row[] = []
  const nc = await connectNats(nats.url, 'bench-features', log)
  try {
    const jsm = await jetstreamManager(nc)
    const sections: [string, () => Promise<Row[]>][] = [
      ['ttl', () => ttlRows(nats, nc, jsm)],
      ['batch', () => batchRows(nats, nc, jsm)],
      ['pause', () => pauseRows(nats, nc, jsm)],
      ['ownership', () => ownershipLeases(nats, nc, jsm)],
      ['ownership', () => ownershipPinned(nats, nc, jsm)],
    ]
    for (const [name, section] of sections) {
      if (!ONLY.includes(name)) continue
      process.stderr.write(`  ${name}\n`)
      rows.push(...(await section()))
    }
  } finally {
    await nc.drain().catch(() => undefined)
    await nats.stop()
    removeTempDir(dir)
  }
  // verdicts that compare rows of two sections
  const leaseTakeover = rows.find((r) => r.case.startsWith('ownership: takeover after kill -9, lease'))
  const pinTakeover = rows.find((r) => r.case.startsWith('ownership: takeover after kill -9, priority'))
  const leaseIdle = rows.find((r) => r.case.startsWith('ownership: idle cost, lease'))
  const pinIdle = rows.find((r) => r.case.startsWith('ownership: idle cost, priority'))
  if (leaseTakeover !== undefined && pinTakeover !== undefined && leaseIdle !== undefined && pinIdle !== undefined) {
    const held = pinnedHeldTakeoverMs ?? Number.POSITIVE_INFINITY
    const idleOf = (r: Row) => r.cpuUsPerReq + (r.otherCpuUsPerReq ?? 0)
    pinTakeover.checks = [
      verdict(
        leaseTakeover.latencyP50Ms / Math.max(pinTakeover.latencyP50Ms, held),
        `${(pinTakeover.latencyP50Ms / 1000).toFixed(1)} s against ${(leaseTakeover.latencyP50Ms / 1000).toFixed(1)} s, ${(held / 1000).toFixed(1)} s with work in flight on the dead owner`,
      ),
    ]
    pinIdle.checks = [
      verdict(
        idleOf(leaseIdle) / idleOf(pinIdle),
        `CPU Σ; ${leaseIdle.rps.toFixed(0)} lease writes/s against a pull per consumer and process every ${String(PULL_EXPIRES_MS)} ms; the runtime's hosts also beat and scan timers`,
      ),
    ]
  }
  const label = `nats ${version}`
  return rows.map((r) => ({ ...r, benchmark: `${r.benchmark} · ${label}` }))
}

const bench: Benchmark = {
  name: NAME,
  description:
    'nats-server ≥ 2.12 features vs today’s design: pinned_client ownership vs leases, per-message TTL, atomic batches, consumer pause',
  run,
}
export default bench
