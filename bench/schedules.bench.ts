import { jetstream } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { provisionActors } from '../actors/runtime/provision.ts'
import { sendToActor } from '../actors/runtime/send.ts'
import { SCHEDULE_FIRE_SUBJECT, scheduleProtocol } from '../actors/protocols/schedule.ts'
import { createLogger } from '../src/kernel/log.ts'
import { startNats } from '../src/platform/local-services.ts'
import { connectNats, provisionNats, type NatsConnection } from '../src/platform/nats.ts'
import { natsNames, type NatsNames } from '../src/platform/nats-names.ts'
import { removeTempDir, startServerChild, tempDir, type ServerChild } from './lib/children.ts'
import { clockTicks, processTicks, ticksToMicros } from './lib/cpu.ts'
import { quantile } from './lib/sequential.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * One actor host (`servers/schedule-host.ts`: the schedule actor with the platform's default
 * lease, tick and ACTOR_TIMER_MS) holding 10,000 schedules, on its own nats-server. The issue's
 * target: every fire within 1 s of its tick, at ≤ 5 % of a core while nothing is due.
 *
 * The schedules are created with the actor's own `set` message (what the schedule service sends
 * after `POST /api/v1/schedules`), straight into the mailbox: no Postgres rows, no functions. The
 * service side of a fire (`svc.schedules.fire`: the run row and the job) is answered here by a
 * stub that records when each request arrived and answers `fired` at once: what is measured is
 * the host's fan-out — its timers, its turns (state CAS per fire) and the request — not the
 * service's database writes. Lateness = arrival at the stub − the tick.
 *
 * Cases: `spread`, schedule i fires every PERIOD s at second i mod PERIOD (10,000 / PERIOD fires
 * every second); `aligned`, all 10,000 fire on the same second every PERIOD s (a burst); `idle`,
 * every schedule re-set to once a year, the host's CPU over IDLE s with 10,000 armed timers.
 * BENCH_SCHEDULES (10000), BENCH_SCHEDULE_PERIOD (10), BENCH_SCHEDULE_WINDOW (30 s measured per
 * firing case), BENCH_SCHEDULE_IDLE (30 s).
 */
const NAME = 'schedules'
const COUNT = Number(process.env['BENCH_SCHEDULES'] ?? 10_000)
const PERIOD_S = Number(process.env['BENCH_SCHEDULE_PERIOD'] ?? 10)
const WINDOW_S = Number(process.env['BENCH_SCHEDULE_WINDOW'] ?? 30)
const IDLE_S = Number(process.env['BENCH_SCHEDULE_IDLE'] ?? 30)
const LATE_LIMIT_MS = 1000
const IDLE_LIMIT = 0.05
const PREFIX = 'bsch'
const log = createLogger({ level: 'warn' })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The fires the stub saw: `<id>:<tick>` → arrival (epoch ms). */
class FireLog {
  readonly seen = new Map<string, number>()
  lastAt = 0
  ids = new Set<string>()
  record(id: string, tick: number): void {
    const now = Date.now()
    const k = `${id}:${String(tick)}`
    if (!this.seen.has(k)) this.seen.set(k, now)
    this.ids.add(id)
    this.lastAt = now
  }
}

/** Answers every fire at once (the schedule service's reply shape) and logs it. */
function fireStub(nc: NatsConnection, names: NatsNames, fires: FireLog) {
  const reply = JSON.stringify({ ok: true, job_id: null, status: 'fired' })
  return nc.subscribe(names.subject(SCHEDULE_FIRE_SUBJECT), {
    callback: (_e, m) => {
      const r = m.json<{ schedule_id: string; tick: number }>()
      fires.record(r.schedule_id, r.tick)
      m.respond(reply)
    },
  })
}

const scheduleId = (i: number) => `s${String(i).padStart(5, '0')}`

async function setAll(
  nc: NatsConnection,
  names: NatsNames,
  version: number,
  cron: (i: number) => string,
): Promise<void> {
  const js = jetstream(nc)
  for (let i = 0; i < COUNT; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, COUNT - i) }, (_, j) =>
        sendToActor(js, names, scheduleProtocol, scheduleId(i + j), 'set', {
          version,
          cron_expression: cron(i + j),
          timezone: 'UTC',
          active: true,
        }),
      ),
    )
  }
}

/** The ticks of one case in [from, to): every (schedule, tick) that should fire, with its lateness if it did. */
async function firingCase(
  label: string,
  host: ServerChild,
  natsPid: number,
  fires: FireLog,
  firstSecond: (i: number) => number,
): Promise<Row> {
  // measure from the next whole period on, so every schedule has armed its new cron
  const from = (Math.floor(Date.now() / (PERIOD_S * 1000)) + 2) * PERIOD_S * 1000
  const to = from + WINDOW_S * 1000
  await sleep(from - Date.now())
  const ticks0 = processTicks(host.pid)
  const nats0 = processTicks(natsPid)
  await sleep(to - Date.now())
  const ticks = processTicks(host.pid) - ticks0
  const natsTicks = processTicks(natsPid) - nats0
  const expected: string[] = []
  for (let i = 0; i < COUNT; i++)
    for (let t = from + firstSecond(i) * 1000; t < to; t += PERIOD_S * 1000)
      expected.push(`${scheduleId(i)}:${String(t)}`)
  // late fires of the window still count: wait for them (at most 30 s more)
  const waitUntil = Date.now() + 30_000
  while (Date.now() < waitUntil && expected.some((k) => !fires.seen.has(k))) await sleep(500)
  const late: number[] = []
  let missing = 0
  for (const k of expected) {
    const at = fires.seen.get(k)
    if (at === undefined) missing++
    else late.push(at - Number(k.slice(k.indexOf(':') + 1)))
  }
  late.sort((a, b) => a - b)
  const max = late.at(-1) ?? 0
  const fired = late.length
  const pctCore = ticks / clockTicks() / WINDOW_S
  return {
    benchmark: NAME,
    case: label,
    requests: fired,
    durationS: WINDOW_S,
    rps: fired / WINDOW_S,
    cpuUsPerReq: ticksToMicros(ticks) / Math.max(1, fired),
    otherCpuUsPerReq: ticksToMicros(natsTicks) / Math.max(1, fired),
    latencyP50Ms: quantile(late, 0.5),
    latencyP99Ms: quantile(late, 0.99),
    errors: missing,
    checks: [
      `max late ${String(Math.round(max))} ms ≤${String(LATE_LIMIT_MS)} ${max <= LATE_LIMIT_MS ? 'ok' : 'OVER'}`,
    ],
    note: `${label}: p50/p99 = how late a fire reached the service after its tick (ms); errors = ticks of the window never fired; max ${String(Math.round(max))} ms; host ${(pctCore * 100).toFixed(1)} % of a core while firing`,
  }
}

async function run(): Promise<Row[]> {
  const dir = tempDir('bench-schedules-')
  const nats = await startNats({ dir: `${dir}/nats`, log })
  const rows: Row[] = []
  let host: ServerChild | undefined
  let nc: NatsConnection | undefined
  try {
    nc = await connectNats(nats.url, 'bench-schedules', log)
    const names = natsNames(PREFIX)
    await provisionNats(nc, names, log)
    await provisionActors(nc, names, { leaseTtlMs: 15_000 })
    const fires = new FireLog()
    const sub = fireStub(nc, names, fires)
    host = await startServerChild('schedule-host', 'schedule-host.ts', {
      NATS_URL: nats.url,
      NATS_PREFIX: PREFIX,
      NODE_ID: 'h1',
    })
    const leases = await new Kvm(nc).open(names.bucket('ACTOR_LEASES'))
    for (;;) {
      let owned = 0
      for await (const k of await leases.keys('schedule.>')) if ((await leases.get(k))?.string() === 'h1') owned++
      if (owned === scheduleProtocol.partitions) break
      await sleep(200)
    }
    process.stderr.write(
      `  host owns the ${String(scheduleProtocol.partitions)} schedule partitions; creating ${String(COUNT)} schedules\n`,
    )
    const t0 = performance.now()
    await setAll(nc, names, 1, (i) => `${String(i % PERIOD_S)}-59/${String(PERIOD_S)} * * * * *`)
    process.stderr.write(
      `  ${String(COUNT)} set messages sent in ${String(Math.round(performance.now() - t0))} ms; waiting for every schedule's first fire\n`,
    )
    const deadline = Date.now() + 180_000
    while (fires.ids.size < COUNT && Date.now() < deadline) await sleep(500)
    if (fires.ids.size < COUNT)
      throw new Error(`only ${String(fires.ids.size)} of ${String(COUNT)} schedules fired within 180 s`)
    process.stderr.write(`  all fired once after ${String(Math.round(performance.now() - t0))} ms; measuring spread\n`)
    rows.push(
      await firingCase(
        `${String(COUNT)} schedules, each every ${String(PERIOD_S)} s, spread (${String(COUNT / PERIOD_S)} fires every second)`,
        host,
        nats.pid,
        fires,
        (i) => i % PERIOD_S,
      ),
    )

    process.stderr.write('  re-setting all to one second of the period (aligned bursts)\n')
    await setAll(nc, names, 2, () => `*/${String(PERIOD_S)} * * * * *`)
    await sleep(PERIOD_S * 1000)
    rows.push(
      await firingCase(
        `${String(COUNT)} schedules, each every ${String(PERIOD_S)} s, aligned (${String(COUNT)} on the same second)`,
        host,
        nats.pid,
        fires,
        () => 0,
      ),
    )

    process.stderr.write('  re-setting all to once a year (idle)\n')
    await setAll(nc, names, 3, () => '0 0 0 1 1 *')
    // settled: no fire for 5 s (the last bursts and the set turns done)
    while (Date.now() - fires.lastAt < 5000) await sleep(500)
    await sleep(2000)
    const ticks0 = processTicks(host.pid)
    const nats0 = processTicks(nats.pid)
    const i0 = performance.now()
    await sleep(IDLE_S * 1000)
    const idleS = (performance.now() - i0) / 1000
    const cpuUs = ticksToMicros(processTicks(host.pid) - ticks0)
    const share = cpuUs / 1e6 / idleS
    rows.push({
      benchmark: NAME,
      case: `idle: ${String(COUNT)} armed schedules, none due`,
      requests: 0,
      durationS: idleS,
      rps: 0,
      cpuUsPerReq: cpuUs / idleS,
      otherCpuUsPerReq: ticksToMicros(processTicks(nats.pid) - nats0) / idleS,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      errors: 0,
      checks: [
        `${(share * 100).toFixed(1)} % of a core ≤${String(IDLE_LIMIT * 100)} % ${share <= IDLE_LIMIT ? 'ok' : 'OVER'}`,
      ],
      note: 'idle row: "CPU µs/req" and "other µs/req" are CPU µs per second of wall time (10,000 = 1 % of a core) of the host and of nats-server',
    })
    sub.unsubscribe()
  } finally {
    await host?.stop()
    await nc?.drain().catch(() => undefined)
    await nats.stop()
    removeTempDir(dir)
  }
  return rows
}

const bench: Benchmark = {
  name: NAME,
  description:
    'one actor host with 10,000 schedules: how late each fires after its tick (spread and aligned), and its idle CPU',
  run,
}
export default bench
