import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statfsSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { jetstream } from '@nats-io/jetstream'
import { lateTeller } from '../../actors/runtime/tell.ts'
import type { HealthService, HealthWarning, SystemHealth } from '../../schemas/system.ts'
import type { ServiceBase } from '../../src/feature/define.ts'
import { serviceRow } from '../../src/feature/health.ts'
import { enqueueJob } from '../../src/jobs/enqueue.ts'
import { startJobWorkers } from '../../src/jobs/start.ts'
import { waitForJob } from '../../src/jobs/wait.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { createDb } from '../../src/platform/db.ts'
import { listMembers, workersBucket } from '../../src/platform/heartbeat.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { systemHealth } from '../../src/system/health.ts'
import { HEALTH_THRESHOLDS } from '../../src/system/health-rules.ts'
import { eventually } from '../helpers/eventually.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { testExecutor } from '../jobs/test-executors.ts'

/*
 * GET /api/v1/system/health on a platform whose job workers run in this process (so the test can
 * stop them): the services in order with sane numbers, a dead-lettered job, a full DATA_DIR (a
 * 4 MB tmpfs, as root), probes that fail or hang, the workers stopped, and B's 403.
 */
const root = process.getuid?.() === 0
let dataDir: string | undefined
if (root) {
  dataDir = mkdtempSync(join(tmpdir(), 'health-disk-'))
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dataDir])
  const dir = dataDir
  t.teardown(() => {
    // lazy: the platform's teardown may run after this one and still hold the directory
    execFileSync('umount', ['-l', dir])
    rmSync(dir, { recursive: true, force: true })
  })
} else t.comment('not root: no tmpfs for DATA_DIR, the full-disk case is skipped')

const env = await startTestPlatform(t, {
  ROLES: 'gateway,resources,actors',
  QUEUE_RETRY_DELAY_SECONDS: '0.05',
  ...(dataDir === undefined ? {} : { DATA_DIR: dataDir }),
})
const { platform, config } = env
const names = natsNames(config.NATS_PREFIX)
const jobs = platform.jobs
if (jobs === undefined || platform.db === undefined || platform.resources === undefined)
  throw new Error('service role missing')
const workers = await startJobWorkers({
  nc: platform.nc,
  names,
  config,
  log: createLogger({ level: 'silent' }),
  executors: { fn: testExecutor(), agent: testExecutor(), subagent: testExecutor() },
  replicas: 1,
})
let workersStopped = false
t.teardown(async () => {
  if (!workersStopped) await workers.stop()
})
const bob = await env.createUser('bob@test.local')

const health = async (): Promise<SystemHealth> => {
  const r = await env.request('GET', '/api/v1/system/health')
  if (r.status !== 200) throw new Error(`health: ${String(r.status)} ${r.text}`)
  return r.body as SystemHealth
}
const service = (h: SystemHealth, name: string): HealthService => {
  const s = h.services.find((x) => x.name === name)
  if (s === undefined) throw new Error(`no service ${name} in ${h.services.map((x) => x.name).join(', ')}`)
  return s
}
const diskWarnings = (h: SystemHealth): HealthWarning[] => h.warnings.filter((w) => w.message.startsWith('disk of'))

t.test('a healthy platform: services in order, sane numbers, no critical warning', async (t) => {
  // a fresh actor host acquires its partitions over a few lease ticks: wait until it owns them all
  const h = await eventually(async () => {
    const x = await health()
    return service(x, 'actors').health === 'healthy' ? x : undefined
  }, 'every actor partition owned')
  const names = h.services.map((s) => s.name)
  t.same(names.slice(0, 2), ['nats', 'postgres'], 'the infrastructure first')
  const apps = names.slice(2)
  t.same(apps, [...apps].sort(), 'then the application services by name')
  for (const n of ['actors', 'workers.agent', 'workers.fn', 'workers.subagent']) t.ok(apps.includes(n), n)
  for (const s of h.services) t.equal(s.status, 'up', `${s.name} up (${s.reason ?? ''})`)
  t.same(
    h.warnings.filter((w) => w.level === 'critical'),
    [],
    'no critical warning',
  )

  const nats = service(h, 'nats')
  t.match(nats.version, /^\d+\.\d+\.\d+/)
  t.match(nats.details, { jetstream: { streams: Number, storage_bytes: Number } })
  t.ok((nats.details['rtt_ms'] as number) >= 0)
  const pg = service(h, 'postgres')
  const conns = pg.details['connections'] as number
  t.ok(conns >= 1 && conns <= (pg.details['max_connections'] as number), `${String(conns)} connections within max`)
  t.ok((pg.uptime_seconds ?? -1) >= 0)

  const fn = service(h, 'workers.fn')
  t.equal(fn.instances, 1)
  t.match(fn.details, { pool: 'fn', backlog: 0, dead_letters: 0, slots: config.QUEUE_FUNCTION_CONCURRENCY })
  t.ok((fn.memory_bytes ?? 0) > 10_000_000, 'the worker process memory, from its heartbeat')
  t.ok((fn.uptime_seconds ?? -1) >= 0)
  t.type(fn.cpu_percent, 'number', 'its CPU percent, from its heartbeat')
  const actors = service(h, 'actors')
  t.ok((actors.instances ?? 0) >= 1, 'an actor host')
  t.equal(actors.health, 'healthy', `every partition owned (${actors.reason ?? ''})`)

  const { cpu, memory, disk } = h.host
  t.ok(cpu.count >= 1)
  t.ok(cpu.load_1m >= 0)
  t.ok(cpu.used_percent === null || (cpu.used_percent >= 0 && cpu.used_percent <= 100))
  t.ok(memory.total_bytes > memory.available_bytes && memory.available_bytes > 0)
  t.ok(memory.used_percent > 0 && memory.used_percent < 100)
  t.equal(disk.path, config.DATA_DIR)
  t.ok(
    disk.used_percent !== null && disk.used_percent >= 0 && disk.used_percent <= 100,
    `disk ${String(disk.used_percent)} %`,
  )
  t.ok(h.duration_ms < 3_000)
  t.comment(`answered in ${String(h.duration_ms)} ms`)
})

t.test('B (role Users) gets 403', async (t) => {
  const r = await env.request('GET', '/api/v1/system/health', { token: bob.token })
  t.equal(r.status, 403)
})

t.test('a dead-lettered job: a warning with the count', async (t) => {
  const job = await enqueueJob(jobs.enqueue, {
    pool: 'fn',
    kind: 'function',
    namespace: 'tests',
    name: 'poison',
    input: { op: 'fail' },
    userId: env.adminId,
    maxAttempts: 2,
  })
  const done = await waitForJob(platform.nc, names, jobs.enqueue.store, job.id, 20_000)
  t.equal(done?.status, 'failed')
  t.type(done?.dlq_seq, 'number', 'moved to the DLQ')
  const h = await health()
  const w = h.warnings.find((x) => x.service === 'workers.fn' && /dead letter/.test(x.message))
  t.match(w, { level: 'warning', value: 1, threshold: HEALTH_THRESHOLDS.deadLetters })
  t.equal(service(h, 'workers.fn').details['dead_letters'], 1)
  t.equal((await env.request('POST', '/api/v1/queue/dlq/flush')).status, 200)
  t.notOk(
    (await health()).warnings.some((x) => /dead letter/.test(x.message)),
    'gone after the flush',
  )
})

t.test(
  'a full DATA_DIR: warning above 90 %, info from 76 to 89 %',
  { skip: !root && 'not root: no tmpfs mount' },
  async (t) => {
    const dir = dataDir as string
    const fill = join(dir, 'fill')
    t.teardown(() => rmSync(fill, { force: true }))
    /** Grows or shrinks the fill file so the disk is at `percent` used, as statfs counts it. */
    const fillTo = (percent: number) => {
      const s = statfsSync(dir)
      const usedNow = (s.blocks - s.bfree) * s.bsize
      const total = s.blocks * s.bsize
      const size = existsSync(fill) ? statSync(fill).size : 0
      const want = Math.max(0, Math.round((percent / 100) * total) - (usedNow - size))
      if (want <= size) truncateSync(fill, want)
      else writeFileSync(fill, Buffer.alloc(want, 1))
    }
    fillTo(95)
    const full = await health()
    const [warn] = diskWarnings(full)
    t.match(warn, { level: 'warning', threshold: 90 }, 'warning above 90 %')
    t.ok((warn?.value ?? 0) > 90 && (warn?.value ?? 0) <= 100, `value ${String(warn?.value)} %`)
    t.equal(warn?.value, full.host.disk.used_percent)
    fillTo(82)
    const [info] = diskWarnings(await health())
    t.match(info, { level: 'info', threshold: 75 }, 'info between 75 and 90 %')
    t.ok((info?.value ?? 0) > 75 && (info?.value ?? 0) <= 90, `value ${String(info?.value)} %`)
    rmSync(fill)
    t.same(diskWarnings(await health()), [], 'nothing once freed')
  },
)

t.test('a sandbox pool short of its minimum: a warning with the missing containers', async (t) => {
  // what a worker process whose driver cannot start sandboxes writes in its heartbeat (sandbox/control.ts)
  const kv = await workersBucket(platform.nc, names)
  const node = { seq: 0, generation: 0, share: null, reloads: 0 }
  const info = {
    ...{ idle: 0, in_use: 0, starting: 0, total: 0, min_size: 2, max_size: 4, waiting: 0, executions: 0 },
    ...{ recycled: 0, destroyed_on_error: 5, executor: 'pool', driver: 'bubblewrap', names: [], pid: 1 },
    interval_ms: 10_000,
    shared: { started: false, count: 0, workers: [] },
    pools: { sandbox: node, shared: node },
  }
  await kv.put(
    'sandbox.broken-node',
    JSON.stringify({ role: 'sandbox', nodeId: 'broken-node', info, last_seen: new Date().toISOString() }),
  )
  t.teardown(() => kv.delete('sandbox.broken-node'))
  const h = await health()
  t.match(service(h, 'sandboxes'), { status: 'up', health: 'degraded', instances: 1, details: { unhealthy: 2 } })
  t.match(
    h.warnings.find((w) => w.service === 'sandboxes'),
    { level: 'warning', value: 2, threshold: 0, message: /2 sandbox containers missing/ },
  )
})

t.test('probes that fail or hang mark their service and the endpoint still answers', async (t) => {
  // a pool that is closed: every query fails at once, as with Postgres gone
  const badDb = await createDb(env.databaseUrl, { maximumPoolSize: 1 })
  await badDb.end()
  const base: ServiceBase = {
    nc: platform.nc,
    js: jetstream(platform.nc),
    names,
    config,
    log: createLogger({ level: 'silent' }),
    db: badDb,
    resources: platform.resources as NonNullable<typeof platform.resources>,
    jobs,
    actorsHere: lateTeller(),
  }
  const h = await systemHealth({
    base,
    timeoutMs: 500,
    checks: [
      { feature: 'hangs', check: () => new Promise(() => undefined) },
      {
        feature: 'analytics',
        check: async () => ({
          services: [serviceRow({ name: 'analytics', kind: 'application', status: 'up', health: 'healthy' })],
          warnings: [{ level: 'warning', service: 'analytics', message: 'dropping logs', value: 3, threshold: 0 }],
        }),
      },
      {
        feature: 'throws',
        check: () => Promise.reject(new Error('boom')),
      },
    ],
  })
  t.match(service(h, 'postgres'), { status: 'down', health: 'unhealthy' })
  t.match(service(h, 'hangs'), { status: 'unknown', reason: /no answer within 500 ms/ })
  t.match(service(h, 'throws'), { status: 'unknown', reason: 'boom' })
  t.equal(service(h, 'analytics').status, 'up', 'a contributed service')
  const apps = h.services.slice(2).map((s) => s.name)
  t.same(apps, [...apps].sort(), 'contributions sorted with the others')
  t.match(h.warnings[0], { level: 'critical', service: 'postgres' }, 'Postgres down is critical, listed first')
  t.ok(
    h.warnings.some((w) => w.service === 'analytics' && w.message === 'dropping logs'),
    'a contributed warning',
  )
  t.ok(
    h.warnings.some((w) => w.level === 'warning' && w.service === 'hangs'),
    'an unknown service warns',
  )
  t.equal(h.status, 'critical')
})

t.test('the workers stopped: critical "no queue workers"', async (t) => {
  await workers.stop()
  workersStopped = true
  const kv = await workersBucket(platform.nc, names)
  await eventually(
    async () => ((await listMembers(kv)).some((m) => ['fn', 'agent', 'subagent'].includes(m.role)) ? undefined : true),
    'the workers heartbeats gone',
  )
  const h = await health()
  for (const p of ['fn', 'agent', 'subagent']) t.match(service(h, `workers.${p}`), { status: 'down', instances: 0 })
  t.match(h.warnings[0], { level: 'critical', service: 'workers', message: /no queue workers/, value: 0, threshold: 1 })
  t.equal(h.status, 'critical')
})
