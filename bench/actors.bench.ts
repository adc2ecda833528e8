import {
  jetstream,
  jetstreamManager,
  AckPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { partitionOf } from '../actors/runtime/hash.ts'
import { provisionActors } from '../actors/runtime/provision.ts'
import { sendToActor } from '../actors/runtime/send.ts'
import { createLogger } from '../src/kernel/log.ts'
import { startNats } from '../src/platform/local-services.ts'
import { connectNats, provisionNats, type NatsConnection } from '../src/platform/nats.ts'
import { natsNames } from '../src/platform/nats-names.ts'
import { removeTempDir, startServerChild, tempDir, type ServerChild } from './lib/children.ts'
import { clockTicks, processTicks } from './lib/cpu.ts'
import type { Benchmark, Row } from './lib/types.ts'
import { tallyProtocol } from './servers/tally-actor.ts'

/*
 * The actor runtime on its own nats-server:
 *   throughput  20,000 messages to 200 keys through 3 host processes (send → handler → CAS state
 *               write → ack) against raw JetStream publish + pull consume + ack as the floor,
 *               each after 4,000 unmeasured warm-up messages; the floor again with the runtime's
 *               mailbox layout (a filtered consumer per partition, three connections, msg ids);
 *               CPU µs per message of the sender (this process) and of the hosts / consumer; and
 *               the runtime's record made by hand (consume, a KV CAS state write per message, ack),
 *               the floor of its design;
 *   takeover    kill -9 of the host owning the most partitions, three times: time until every one
 *               of its partitions is leased by a live host, against the lease TTL (in the note).
 */
const NAME = 'actors'
const MESSAGES = Number(process.env['BENCH_ACTOR_MESSAGES'] ?? 20_000)
// BENCH_ACTOR_TAKEOVER=0 skips the kill -9 rounds (quicker runs while working on throughput)
const TAKEOVER = process.env['BENCH_ACTOR_TAKEOVER'] !== '0'
const KEYS = Number(process.env['BENCH_ACTOR_KEYS'] ?? 200)
// sent first and not measured, to the raw floor and to the runtime alike (a multiple of KEYS)
const WARMUP = Number(process.env['BENCH_ACTOR_WARMUP'] ?? 4_000)
const LEASE_TTL_MS = 3000
const TICK_MS = 500
const log = createLogger({ level: 'warn' })

const ticksUs = (ticks: number): number => (ticks / clockTicks()) * 1e6
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

type RowTimes = Pick<
  Row,
  'requests' | 'durationS' | 'rps' | 'cpuUsPerReq' | 'otherCpuUsPerReq' | 'latencyP50Ms' | 'latencyP99Ms' | 'errors'
>

/**
 * How the floor's messages reach their consumers: one consumer for everything (the floor) or, as
 * the runtime's mailboxes do, one filtered consumer per partition (`<prefix>.<partition>.<key>`),
 * spread over several connections, each publish carrying a `Nats-Msg-Id` (sendToActor's dedupe).
 */
interface Layout {
  partitions: number
  connections: NatsConnection[]
  msgId: boolean
}

/**
 * A work-queue stream `stream` (KEYS keys) and pull consumers handing each message to
 * `onMessage`, which calls `handled` once it is done with it: WARMUP messages unmeasured, then
 * MESSAGES timed until every one was handled. CPU of this process and of nats-server per message.
 */
async function timeRawConsumer(
  js: JetStreamClient,
  jsm: JetStreamManager,
  natsPid: number,
  stream: string,
  onMessage: (m: JsMsg, handled: () => void) => void,
  layout?: Layout,
): Promise<{ row: RowTimes }> {
  const prefix = stream.toLowerCase()
  await jsm.streams.add({
    name: stream,
    subjects: [`${prefix}.>`],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    ...(layout?.msgId === true ? { duplicate_window: 10 * 60 * 1e9 } : {}),
  })
  let got = 0
  let target = WARMUP
  let reached: (() => void) | undefined
  const handled = () => {
    if (++got >= target) reached?.()
  }
  const all: ConsumerMessages[] = []
  for (let p = 0; p < (layout?.partitions ?? 1); p++) {
    const name = `c${String(p)}`
    // the runtime's mailbox consumer settings (actors/runtime/mailbox.ts) with a layout; the floor's own without
    await jsm.consumers.add(stream, {
      durable_name: name,
      ack_policy: AckPolicy.Explicit,
      ...(layout === undefined
        ? { max_ack_pending: 10_000 }
        : { filter_subject: `${prefix}.${String(p)}.*`, max_ack_pending: 256 }),
    })
    const consumerJs =
      layout === undefined ? js : jetstream(layout.connections[p % layout.connections.length] as NatsConnection)
    const msgs = await (
      await consumerJs.consumers.get(stream, name)
    ).consume({ max_messages: layout === undefined ? 1000 : 64 })
    all.push(msgs)
    void (async () => {
      for await (const m of msgs) onMessage(m, handled)
    })()
  }
  const subject = (i: number) => {
    const key = `k${String(i % KEYS)}`
    return layout === undefined ? `${prefix}.${key}` : `${prefix}.${String(partitionOf(key, layout.partitions))}.${key}`
  }
  const publish = async (n: number) => {
    for (let i = 0; i < n; i += 200)
      await Promise.all(
        Array.from({ length: Math.min(200, n - i) }, (_, j) =>
          js.publish(
            subject(i + j),
            JSON.stringify({ n: i + j }),
            layout?.msgId === true ? { msgID: crypto.randomUUID() } : undefined,
          ),
        ),
      )
  }
  const warm = new Promise<void>((r) => (reached = r))
  await publish(WARMUP)
  await warm
  target = WARMUP + MESSAGES
  const done = new Promise<void>((r) => (reached = r))
  const cpu0 = process.cpuUsage()
  const nats0 = processTicks(natsPid)
  const t0 = performance.now()
  await publish(MESSAGES)
  await done
  const s = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  const natsUs = ticksUs(processTicks(natsPid) - nats0)
  for (const msgs of all) await msgs.close()
  return {
    row: {
      requests: MESSAGES,
      durationS: s,
      rps: MESSAGES / s,
      cpuUsPerReq: (cpu.user + cpu.system) / MESSAGES,
      otherCpuUsPerReq: natsUs / MESSAGES,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      errors: 0,
    },
  }
}

async function run(): Promise<Row[]> {
  const dir = tempDir('bench-actors-')
  const nats = await startNats({ dir: `${dir}/nats`, log })
  const rows: Row[] = []
  const hosts: ServerChild[] = []
  try {
    const nc = await connectNats(nats.url, 'bench-actors', log)
    const js = jetstream(nc)
    const jsm = await jetstreamManager(nc)
    // Raw floor: publish to a work-queue stream, one pull consumer acking each message.
    {
      const t = await timeRawConsumer(js, jsm, nats.pid, 'RAWA', (m, handled) => {
        m.ack()
        handled()
      })
      rows.push({
        benchmark: NAME,
        case: 'raw JetStream publish + consume + ack',
        baseline: true,
        ...t.row,
        note: 'other = nats-server',
      })
    }
    // The same with the runtime's mailbox layout: a filtered consumer per partition of the tally
    // actor, on three connections (one per host), a Nats-Msg-Id on each publish; no state written.
    {
      const connections = await Promise.all(
        [0, 1, 2].map((i) => connectNats(nats.url, `bench-actors-layout-${String(i)}`, log)),
      )
      const t = await timeRawConsumer(
        js,
        jsm,
        nats.pid,
        'RAWL',
        (m, handled) => {
          m.ack()
          handled()
        },
        { partitions: tallyProtocol.partitions, connections, msgId: true },
      )
      rows.push({
        benchmark: NAME,
        case: `raw JetStream, the mailbox layout: ${String(tallyProtocol.partitions)} filtered consumers on 3 connections, msg id`,
        ...t.row,
        note: "the raw floor with the runtime's consumers (one per partition, max_ack_pending 256, pulls of 64) spread over three connections, and sendToActor's Nats-Msg-Id; no state; other = nats-server",
      })
      for (const c of connections) await c.drain()
    }
    // The runtime's record by hand: the same, with each key's state written by CAS (a KV update at
    // the key's last revision, in memory) before the message is acked, one key's messages in order.
    {
      const kv = await new Kvm(nc).create('RAWS_STATE', { history: 1 })
      const byKey = new Map<string, { chain: Promise<void>; rev: number; count: number }>()
      const t = await timeRawConsumer(js, jsm, nats.pid, 'RAWS', (m, handled) => {
        const key = m.subject.slice(m.subject.indexOf('.') + 1)
        let k = byKey.get(key)
        if (k === undefined) byKey.set(key, (k = { chain: Promise.resolve(), rev: 0, count: 0 }))
        const entry = k
        const handle = async (): Promise<void> => {
          const state = JSON.stringify({ state: { count: ++entry.count } })
          entry.rev = entry.rev === 0 ? await kv.create(key, state) : await kv.update(key, state, entry.rev)
          m.ack()
          handled()
        }
        entry.chain = entry.chain.then(handle)
      })
      rows.push({
        benchmark: NAME,
        case: `raw JetStream + a CAS state write per message, ${String(KEYS)} keys, one process`,
        ...t.row,
        note: "the runtime's record made by hand with nats.js: consume, KV update at the key's last revision, ack; other = nats-server",
      })
      await kv.destroy()
    }
    // The runtime: 3 host processes.
    const names = natsNames('ba')
    await provisionNats(nc, names, log)
    await provisionActors(nc, names, { leaseTtlMs: LEASE_TTL_MS })
    const leases = await new Kvm(nc).open(names.bucket('ACTOR_LEASES'))
    const states = await new Kvm(nc).open(names.bucket('ACTOR_STATE'))
    // every state write is one message of the bucket's stream: its last sequence counts them
    const stateWrites = async () => (await jsm.streams.info(`KV_${names.bucket('ACTOR_STATE')}`)).state.last_seq
    const owners = async () => {
      const out = new Map<string, string>()
      for await (const k of await leases.keys()) {
        const e = await leases.get(k)
        if (e !== null && e.operation === 'PUT' && e.length > 0) out.set(k, e.string())
      }
      return out
    }
    let nextHost = 0
    const startHost = async () => {
      const id = `h${String(nextHost++)}`
      const child = await startServerChild(id, 'actor-host.ts', {
        NATS_URL: nats.url,
        NATS_PREFIX: 'ba',
        NODE_ID: id,
        LEASE_TTL_MS: String(LEASE_TTL_MS),
        TICK_MS: String(TICK_MS),
      })
      hosts.push(child)
      return { id, child }
    }
    const live = [await startHost(), await startHost(), await startHost()]
    while ((await owners()).size < tallyProtocol.partitions || new Set((await owners()).values()).size < 3)
      await sleep(100)
    // what the hosts and nats-server burn with no messages (lease renewals, heartbeats, timer scans)
    const idleMs = 2000
    const idle0 = live.map((h) => processTicks(h.child.pid))
    const idleNats0 = processTicks(nats.pid)
    await sleep(idleMs)
    const idleHosts =
      live.reduce((sum, h, i) => sum + ticksUs(processTicks(h.child.pid) - (idle0[i] ?? 0)), 0) / (idleMs * 1000)
    const idleNats = ticksUs(processTicks(nats.pid) - idleNats0) / (idleMs * 1000)
    /** `n` messages in rounds of 200 concurrent sends; message i goes to `keyOf(i)`. */
    const sendRounds = async (n: number, keyOf: (i: number) => string) => {
      for (let i = 0; i < n; i += 200)
        await Promise.all(
          Array.from({ length: Math.min(200, n - i) }, (_, j) =>
            sendToActor(js, names, tallyProtocol, keyOf(i + j), 'add', { n: i + j }),
          ),
        )
    }
    /** Until the key's state has counted at least `min` messages. */
    const counted = async (key: string, min: number) => {
      for (;;) {
        const e = await states.get(`tally.${key}`)
        if (e !== null && e.length > 0 && e.json<{ state: { count: number } }>().state.count >= min) return
        await sleep(20)
      }
    }
    const spread = (i: number) => `k${String(i % KEYS)}`
    // warm-up (not measured): the hosts' code paths compiled, every key loaded
    await sendRounds(WARMUP, spread)
    for (let k = 0; k < KEYS; k++) await counted(spread(k), WARMUP / KEYS)
    {
      const writes0 = await stateWrites()
      const cpu0 = process.cpuUsage()
      const ticks0 = live.map((h) => processTicks(h.child.pid))
      const nats0 = processTicks(nats.pid)
      const t0 = performance.now()
      await sendRounds(MESSAGES, spread)
      for (let k = 0; k < KEYS; k++) await counted(spread(k), (WARMUP + MESSAGES) / KEYS)
      const s = (performance.now() - t0) / 1000
      const cpu = process.cpuUsage(cpu0)
      const hostUs = live.reduce((sum, h, i) => sum + ticksUs(processTicks(h.child.pid) - (ticks0[i] ?? 0)), 0)
      const natsUs = ticksUs(processTicks(nats.pid) - nats0)
      const writes = await stateWrites()
      rows.push({
        benchmark: NAME,
        case: 'actor runtime, 3 hosts (CAS state per message)',
        // issue 13: actor messages/s ≥ 0.5× raw JetStream on the same server
        rpsLimit: 0.5,
        requests: MESSAGES,
        durationS: s,
        rps: MESSAGES / s,
        cpuUsPerReq: (cpu.user + cpu.system) / MESSAGES,
        otherCpuUsPerReq: hostUs / MESSAGES,
        latencyP50Ms: 0,
        latencyP99Ms: 0,
        errors: 0,
        note: `other = the 3 hosts; nats-server ${(natsUs / MESSAGES).toFixed(1)} µs/msg; ${(MESSAGES / Math.max(1, writes - writes0)).toFixed(1)} messages per state write; idle: hosts ${(idleHosts * 100).toFixed(1)} %, nats-server ${(idleNats * 100).toFixed(1)} % of a core`,
      })
    }
    // One key: every message goes through the same key's serial turn (the per-key ceiling).
    {
      const one = Math.min(2000, MESSAGES)
      const ticks0 = live.map((h) => processTicks(h.child.pid))
      const cpu0 = process.cpuUsage()
      const t0 = performance.now()
      await sendRounds(one, () => 'solo')
      await counted('solo', one)
      const s = (performance.now() - t0) / 1000
      const cpu = process.cpuUsage(cpu0)
      const hostUs = live.reduce((sum, h, i) => sum + ticksUs(processTicks(h.child.pid) - (ticks0[i] ?? 0)), 0)
      const share = new Map<string, number>()
      for (const h of (await owners()).values()) share.set(h, (share.get(h) ?? 0) + 1)
      rows.push({
        benchmark: NAME,
        case: 'actor runtime, 1 key',
        requests: one,
        durationS: s,
        rps: one / s,
        cpuUsPerReq: (cpu.user + cpu.system) / one,
        otherCpuUsPerReq: hostUs / one,
        latencyP50Ms: 0,
        latencyP99Ms: 0,
        errors: 0,
        note: `HRW partitions per host (${String(tallyProtocol.partitions)}): ${[...share.values()].sort((a, b) => b - a).join(', ')}`,
      })
    }
    // Takeover after kill -9, three times (a fresh host joins after each kill).
    const takeovers: number[] = []
    for (let round = 0; round < (TAKEOVER ? 3 : 0); round++) {
      const o = await owners()
      const counts = new Map<string, number>()
      for (const h of o.values()) counts.set(h, (counts.get(h) ?? 0) + 1)
      const victimId = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0]
      const victim = live.find((h) => h.id === victimId)
      if (victim === undefined) break
      const parts = [...o.entries()].filter(([, h]) => h === victimId).map(([p]) => p)
      const t0 = performance.now()
      process.kill(victim.child.pid, 'SIGKILL')
      live.splice(live.indexOf(victim), 1)
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
      live.push(await startHost())
      while ((await owners()).size < tallyProtocol.partitions) await sleep(100)
      await sleep(LEASE_TTL_MS)
    }
    const last = rows.find((r) => r.case.startsWith('actor runtime, 3 hosts'))
    if (last !== undefined && TAKEOVER)
      last.note = `${last.note ?? ''}; takeover after kill -9 with lease TTL ${String(LEASE_TTL_MS)} ms, tick ${String(TICK_MS)} ms: ${takeovers.map((ms) => `${String(Math.round(ms))} ms`).join(', ')}`
    await nc.drain()
  } finally {
    for (const h of hosts) await h.stop().catch(() => undefined)
    await nats.stop()
    removeTempDir(dir)
  }
  return rows
}

const bench: Benchmark = {
  name: NAME,
  nats: true,
  description: 'actor runtime: messages/s through hosts vs raw JetStream; partition takeover time after kill -9',
  run,
}
export default bench
