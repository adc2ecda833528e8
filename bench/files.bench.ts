import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createReadStream, readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { jetstream } from '@nats-io/jetstream'
import { Objm, StorageType, type ObjectStore } from '@nats-io/obj'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { createLogger } from '../src/kernel/log.ts'
import { startNats, type LocalService } from '../src/platform/local-services.ts'
import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids, processTicks, ticksToMicros } from './lib/cpu.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * A 50 MB file through the platform (one process, ROLES=all: gateway, service, object store
 * client) against `cp` of the same file on the same disk, and against the NATS object store alone:
 *   baseline    cp 50 MB + sync (its CPU from bash's cutime/cstime after the copy)
 *   floors      the nats.js object store client's own `put` (128 KiB chunks, one ack at a time)
 *               and `get` of the same file, from this process to a nats-server of its own (the
 *               binary the platform runs, its store in the same temporary directory's disk): what
 *               the server and one client cost with no HTTP, no gateway and no service (this
 *               process's CPU; that nats-server's in "other")
 *   upload      POST /files/… raw body, chunked, streamed into the NATS object store
 *   download    GET /files/…, streamed out of the object store
 * The cases take turns, RUNS rounds of cp, put, get, upload, download, so a load change on the
 * shared host falls on all of them; each row reports its median. "req/s" is transfers per second;
 * the note gives MB/s, the ratio to the matching floor and, for the platform rows, the platform
 * process's peak RSS growth during the transfer (sampled every 20 ms from /proc/<pid>/status),
 * which stays far below the file size if nothing buffers the file. nats-server's CPU (it stores
 * the chunks) is in "other µs/req".
 * Targets (issue 43, item 4): throughput ≥ 0.5× cp (`rpsLimit`), RSS growth < 32 MB (`checks`).
 */
const NAME = 'files'
const SIZE = 50 * 1024 * 1024
const RUNS = 5
const MB = 1024 * 1024
const RSS_TARGET = 32 * MB

const rssOf = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${String(pid)}/status`, 'utf8'))
  return m === null ? 0 : Number(m[1]) * 1024
}

interface One {
  seconds: number
  cpuUs: number
  otherUs: number
  rssGrowth: number
}

async function timed(pid: number, helpers: number[], fn: () => Promise<void>): Promise<One> {
  const base = rssOf(pid)
  let peak = base
  const timer = setInterval(() => {
    peak = Math.max(peak, rssOf(pid))
  }, 20)
  const ticks = processTicks(pid)
  const other = helpers.reduce((s, h) => s + processTicks(h), 0)
  const t0 = performance.now()
  await fn()
  const seconds = (performance.now() - t0) / 1000
  clearInterval(timer)
  peak = Math.max(peak, rssOf(pid))
  return {
    seconds,
    cpuUs: ticksToMicros(processTicks(pid) - ticks),
    otherUs: ticksToMicros(helpers.reduce((s, h) => s + processTicks(h), 0) - other),
    rssGrowth: peak - base,
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number

function row(label: string, runs: One[], extra: Partial<Row> = {}, floor?: One[]): Row {
  const seconds = median(runs.map((r) => r.seconds))
  const growth = Math.max(...runs.map((r) => r.rssGrowth))
  const vsFloor =
    floor === undefined
      ? ''
      : `, ${(median(floor.map((r) => r.seconds)) / seconds).toFixed(2)}× the floor's MB/s at ${(
          median(runs.map((r) => r.cpuUs + r.otherUs)) / median(floor.map((r) => r.cpuUs + r.otherUs))
        ).toFixed(2)}× its CPU Σ`
  return {
    benchmark: NAME,
    case: label,
    requests: runs.length,
    durationS: seconds,
    rps: 1 / seconds,
    cpuUsPerReq: median(runs.map((r) => r.cpuUs)),
    otherCpuUsPerReq: median(runs.map((r) => r.otherUs)),
    latencyP50Ms: seconds * 1000,
    latencyP99Ms: Math.max(...runs.map((r) => r.seconds)) * 1000,
    errors: 0,
    ...(growth > 0
      ? { checks: [`RSS +${(growth / MB).toFixed(1)} MB <32 MB ${growth < RSS_TARGET ? 'ok' : 'OVER'}`] }
      : {}),
    note: `${(SIZE / MB / seconds).toFixed(0)} MB/s${vsFloor}${
      growth > 0
        ? `, peak RSS growth ${(growth / MB).toFixed(1)} MB (runs: ${runs.map((r) => (r.rssGrowth / MB).toFixed(1)).join(', ')}; target < 32 MB ${growth < RSS_TARGET ? 'ok' : 'OVER'})`
        : ''
    }`,
    ...extra,
  }
}

function upload(base: string, token: string, file: string, name: string): Promise<void> {
  const url = new URL(`${base}/files/bench/media?name=${name}`)
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/octet-stream',
          'transfer-encoding': 'chunked',
        },
      },
      (res) => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('end', () =>
          res.statusCode === 201 ? resolve() : reject(new Error(`upload: ${String(res.statusCode)} ${body}`)),
        )
      },
    )
    req.on('error', reject)
    createReadStream(file, { highWaterMark: 256 * 1024 }).pipe(req)
  })
}

async function download(base: string, token: string, name: string): Promise<void> {
  const res = await fetch(`${base}/files/bench/media/${name}`, { headers: { authorization: `Bearer ${token}` } })
  if (res.status !== 200) throw new Error(`download: ${String(res.status)}`)
  let n = 0
  for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) n += c.length
  if (n !== SIZE) throw new Error(`download: ${String(n)} bytes`)
}

/** cp + sync of `file`; bash's cutime/cstime after the copy are cp's CPU. */
function copy(file: string, to: string): One {
  const t0 = performance.now()
  const out = execFileSync(
    'bash',
    ['-c', 'cp "$1" "$2" && sync "$2"; read -r -a s < /proc/$$/stat; echo "${s[15]} ${s[16]}"', '_', file, to],
    { encoding: 'utf8' },
  )
  const [ut, st] = out.trim().split(' ').map(Number)
  return {
    seconds: (performance.now() - t0) / 1000,
    cpuUs: ticksToMicros((ut ?? 0) + (st ?? 0)),
    otherUs: 0,
    rssGrowth: 0,
  }
}

/** A case run in this process: its own CPU (process.cpuUsage) and the helpers' (nats-server). */
async function inProcess(helpers: number[], fn: () => Promise<void>): Promise<One> {
  const cpu = process.cpuUsage()
  const other = helpers.reduce((s, h) => s + processTicks(h), 0)
  const t0 = performance.now()
  await fn()
  const seconds = (performance.now() - t0) / 1000
  const used = process.cpuUsage(cpu)
  return {
    seconds,
    cpuUs: used.user + used.system,
    otherUs: ticksToMicros(helpers.reduce((s, h) => s + processTicks(h), 0) - other),
    rssGrowth: 0,
  }
}

const RAW_BUCKET = 'BENCH_RAW_FILES'

async function rawPut(os: ObjectStore, file: string, name: string): Promise<void> {
  const body = Readable.toWeb(createReadStream(file, { highWaterMark: 256 * 1024 })) as ReadableStream<Uint8Array>
  const info = await os.put({ name }, body)
  if (info.size !== SIZE) throw new Error(`raw put: ${String(info.size)} bytes`)
}

async function rawGet(os: ObjectStore, name: string): Promise<void> {
  const got = await os.get(name)
  if (got === null) throw new Error(`raw get: ${name} missing`)
  let n = 0
  for await (const c of got.data as unknown as AsyncIterable<Uint8Array>) n += c.length
  const failed: unknown = await got.error
  if (failed instanceof Error) throw failed
  if (n !== SIZE) throw new Error(`raw get: ${String(n)} bytes`)
}

async function run(): Promise<Row[]> {
  const dataDir = tempDir('bench-files-')
  const work = tempDir('bench-files-data-')
  let child: ServerChild | undefined
  let nc: NatsConnection | undefined
  let floorNats: LocalService | undefined
  try {
    const file = join(work, 'fifty.bin')
    writeFileSync(file, randomBytes(SIZE))
    process.stderr.write('  starting platform...\n')
    child = await startPlatformChild(dataDir, { SANDBOX_MIN_SIZE: '0', SANDBOX_MIN_IDLE: '0' })
    const { token, natsUrl } = child.info
    if (token === undefined || natsUrl === undefined) throw new Error('platform child reported no token / natsUrl')
    const base = `http://127.0.0.1:${String(child.info.port)}`
    const made = await fetch(`${base}/api/v1/collections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: 'bench', name: 'media', max_file_size_mb: 100, max_total_size_gb: 10 }),
    })
    if (made.status !== 201) throw new Error(`collection: ${await made.text()}`)
    // the floors: the plain nats.js client (none of the platform's patches: this process applies none)
    floorNats = await startNats({ dir: join(work, 'nats'), log: createLogger({ level: 'warn' }) })
    nc = await connect({ servers: floorNats.url })
    const os = await new Objm(jetstream(nc)).create(RAW_BUCKET, { storage: StorageType.File })
    const floorHelpers = [floorNats.pid]
    const pid = child.pid
    const helpers = childPids(pid)
    const cp: One[] = []
    const puts: One[] = []
    const gets: One[] = []
    const ups: One[] = []
    const downs: One[] = []
    for (let i = 0; i < RUNS; i++) {
      process.stderr.write(`  round ${String(i + 1)}/${String(RUNS)}: cp, raw put, raw get, upload, download\n`)
      cp.push(copy(file, join(work, `copy-${String(i)}.bin`)))
      puts.push(await inProcess(floorHelpers, () => rawPut(os, file, `r${String(i)}`)))
      gets.push(await inProcess(floorHelpers, () => rawGet(os, `r${String(i)}`)))
      ups.push(await timed(pid, helpers, () => upload(base, token, file, `f${String(i)}.bin`)))
      downs.push(await timed(pid, helpers, () => download(base, token, `f${String(i)}.bin`)))
    }
    await os.destroy()
    return [
      row('cp 50 MB (same disk)', cp, { baseline: true }),
      row('floor: NATS object store put 50 MB (nats.js put, 128 KiB chunks)', puts),
      row('floor: NATS object store get 50 MB (nats.js get)', gets),
      row('upload 50 MB (raw, streamed to the object store)', ups, { rpsLimit: 0.5 }, puts),
      row('download 50 MB (streamed from the object store)', downs, { rpsLimit: 0.5 }, gets),
    ]
  } finally {
    await nc?.close()
    await floorNats?.stop()
    await child?.stop()
    removeTempDir(dataDir)
    removeTempDir(work)
  }
}

const bench: Benchmark = {
  name: NAME,
  description: '50 MB upload and download through the platform vs cp: throughput, CPU, peak RSS growth',
  run,
}
export default bench
