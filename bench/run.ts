import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { signalAllChildren, stopAllChildren } from './lib/children.ts'
import { clockTicks } from './lib/cpu.ts'
import { CONNECTIONS, PIPELINING, loadSettings } from './lib/load.ts'
import { natsOption, natsServers, type NatsServerChoice } from './lib/nats-servers.ts'
import { writeTable } from './lib/readme-table.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * The bench registry: every `bench/<name>.bench.ts` default-exports a `Benchmark`. Runs all of them
 * (or those named: `npm run bench -- gateway`), prints one table to stdout and writes the rows as
 * JSON to bench/results/<timestamp>.json. A run of every benchmark (or any run with BENCH_README=1)
 * also writes its table into bench/README.md (lib/readme-table.ts). Progress and server logs go to
 * stderr. `--nats=current|debian|both|<path>` (or BENCH_NATS) picks the nats-server of the
 * benchmarks marked `nats` (lib/nats-servers.ts): each runs once per server, its rows named
 * `<benchmark> · nats <version>`, so ratios stay within one server's rows.
 */
const out = (s: string) => process.stdout.write(`${s}\n`)

function isBenchmark(v: unknown): v is Benchmark {
  const b = v as Partial<Benchmark> | undefined
  return typeof b?.name === 'string' && typeof b.description === 'string' && typeof b.run === 'function'
}

async function registry(): Promise<Benchmark[]> {
  const files = readdirSync(import.meta.dirname)
    .filter((f) => f.endsWith('.bench.ts'))
    .sort()
  const found: Benchmark[] = []
  for (const file of files) {
    const mod = (await import(pathToFileURL(join(import.meta.dirname, file)).href)) as { default?: unknown }
    if (!isBenchmark(mod.default)) throw new Error(`${file} must default-export { name, description, run }`)
    found.push(mod.default)
  }
  return found
}

export type ResultRow = Row & {
  cpuRatio: number | undefined
  rpsRatio: number | undefined
  p50Ratio: number | undefined
}

/** Ratios against the row's `reference` (a case of the same benchmark) or else the benchmark's baseline; `totalCpu` compares CPU + other. */
function withRatios(rows: Row[]): ResultRow[] {
  return rows.map((r) => {
    const base = rows.find(
      (b) => b.benchmark === r.benchmark && (r.reference === undefined ? b.baseline === true : b.case === r.reference),
    )
    const cpu = (x: Row) => x.cpuUsPerReq + (r.totalCpu === true ? (x.otherCpuUsPerReq ?? 0) : 0)
    // rows of rounds (takeovers, handovers) have no rate or CPU: no ratio rather than NaN×
    const ratio = (a: number, b: number) => (base === undefined || !Number.isFinite(a / b) ? undefined : a / b)
    return {
      ...r,
      cpuRatio: base === undefined ? undefined : ratio(cpu(r), cpu(base)),
      rpsRatio: base === undefined ? undefined : ratio(r.rps, base.rps),
      p50Ratio: base === undefined ? undefined : ratio(r.latencyP50Ms, base.latencyP50Ms),
    }
  })
}

const fixed = (n: number | undefined, digits: number) => (n === undefined ? '-' : n.toFixed(digits))

function table(rows: ResultRow[]): string[] {
  const notes: string[] = []
  const header = [
    'benchmark',
    'case',
    'req/s',
    'CPU µs/req',
    'other µs/req',
    'p50 ms',
    'p99 ms',
    'errors',
    'req/s ×base',
    'CPU ×base',
    'target',
  ]
  const body = rows.map((r) => {
    let label = r.case
    if (r.note !== undefined) {
      notes.push(`[${String(notes.length + 1)}] ${r.note}`)
      label += ` [${String(notes.length)}]`
    }
    // Σ: the ratio of CPU summed over every process of the two rows (`totalCpu`).
    const ratio =
      r.baseline === true
        ? 'baseline'
        : r.cpuRatio === undefined
          ? '-'
          : `${r.cpuRatio.toFixed(2)}×${r.totalCpu === true ? ' Σ' : ''}`
    const rpsRatio = r.baseline === true || r.rpsRatio === undefined ? '-' : `${r.rpsRatio.toFixed(2)}×`
    const targets: string[] = []
    if (r.rpsLimit !== undefined && r.rpsRatio !== undefined)
      targets.push(`req/s ≥${String(r.rpsLimit)}× ${r.rpsRatio >= r.rpsLimit ? 'ok' : 'UNDER'}`)
    if (r.limit !== undefined && r.cpuRatio !== undefined)
      targets.push(
        `${r.rpsLimit === undefined ? '' : 'CPU '}≤${String(r.limit)}× ${r.cpuRatio <= r.limit ? 'ok' : 'OVER'}`,
      )
    // latency has no ratio column: the ratio is written out with its verdict
    if (r.p50Limit !== undefined && r.p50Ratio !== undefined)
      targets.push(`p50 ${r.p50Ratio.toFixed(2)}× ≤${String(r.p50Limit)}× ${r.p50Ratio <= r.p50Limit ? 'ok' : 'OVER'}`)
    targets.push(...(r.checks ?? []))
    return [
      r.benchmark,
      label,
      Math.round(r.rps).toString(),
      fixed(r.cpuUsPerReq, 1),
      fixed(r.otherCpuUsPerReq, 1),
      fixed(r.latencyP50Ms, 2),
      fixed(r.latencyP99Ms, 2),
      String(r.errors),
      rpsRatio,
      ratio,
      targets.join(', '),
    ]
  })
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? '').length)))
  const numeric = new Set([2, 3, 4, 5, 6, 7, 8, 9])
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (numeric.has(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))).join(' | ')} |`
  return [
    line(header),
    `|${widths.map((w, i) => (numeric.has(i) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`,
    ...body.map(line),
    ...(notes.length > 0 ? ['', ...notes] : []),
  ]
}

async function main(): Promise<number> {
  const all = await registry()
  const { spec, names: asked } = natsOption(process.argv.slice(2))
  const servers = natsServers(spec)
  const unknown = asked.filter((n) => !all.some((b) => b.name === n))
  if (unknown.length > 0) {
    process.stderr.write(`unknown benchmark ${unknown.join(', ')}; known: ${all.map((b) => b.name).join(', ')}\n`)
    return 2
  }
  const chosen = asked.length === 0 ? all : all.filter((b) => asked.includes(b.name))
  const settings = {
    ...loadSettings(),
    nats: servers.map((s) => ({ bin: s.bin, version: s.version })),
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    clockTicksPerSecond: clockTicks(),
  }
  const startedAt = new Date()
  // the host's load average when the run began and ended: other work on the machine moves absolutes
  const loadAtStart = loadavg()[0] ?? 0
  const rows: Row[] = []
  const failures: { benchmark: string; error: string }[] = []
  const savedBin = process.env['NATS_SERVER_BIN']
  // One server chosen: every benchmark runs on it; several: the others run on the first.
  if (spec !== undefined && servers[0] !== undefined) process.env['NATS_SERVER_BIN'] = servers[0].bin
  for (const b of chosen) {
    const runs: (NatsServerChoice | undefined)[] = b.nats === true && servers.length > 0 ? servers : [undefined]
    for (const server of runs) {
      const name = server === undefined ? b.name : `${b.name} · ${server.label}`
      process.stderr.write(`${name}: ${b.description}${server === undefined ? '' : ` (${server.bin})`}\n`)
      if (server !== undefined) process.env['NATS_SERVER_BIN'] = server.bin
      try {
        const got = await b.run()
        rows.push(
          ...(server === undefined ? got : got.map((r) => ({ ...r, benchmark: `${r.benchmark} · ${server.label}` }))),
        )
      } catch (err) {
        const error = err instanceof Error ? (err.stack ?? err.message) : String(err)
        failures.push({ benchmark: name, error })
        process.stderr.write(`${name} failed: ${error}\n`)
      } finally {
        await stopAllChildren()
      }
    }
    if (spec !== undefined && servers[0] !== undefined) process.env['NATS_SERVER_BIN'] = servers[0].bin
  }
  if (savedBin === undefined) delete process.env['NATS_SERVER_BIN']
  else process.env['NATS_SERVER_BIN'] = savedBin
  const results = withRatios(rows)
  // the servers only when a NATS-bound benchmark ran (the others may start one, but not by choice)
  const natsLine = chosen.some((b) => b.nats === true)
    ? `; ${servers.map((s) => `${s.label} (${s.bin})`).join(', ')}`
    : ''
  const hostLoad = `host load average ${loadAtStart.toFixed(1)} at the start, ${(loadavg()[0] ?? 0).toFixed(1)} at the end`
  const loadLine = `load: autocannon, ${String(settings.connections)} connections, pipelining ${String(settings.pipelining)}, ${String(settings.durationS)} s per case after ${String(settings.warmupS)} s warm-up; ${String(availableParallelism())} CPUs${natsLine}; ${hostLoad}`
  const lines = [...table(results), ...failures.map((f) => `FAILED ${f.benchmark}: ${f.error.split('\n')[0] ?? ''}`)]
  out('')
  out(loadLine)
  for (const l of lines) out(l)
  if (asked.length === 0 || process.env['BENCH_README'] === '1') {
    const finishedAt = new Date()
    const minutes = Math.round((finishedAt.getTime() - startedAt.getTime()) / 60_000)
    const what = asked.length === 0 ? 'every benchmark' : asked.join(', ')
    writeTable(join(import.meta.dirname, 'README.md'), [
      '',
      `\`npm run bench\` (${what}), ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${String(minutes)} min; node ${process.version}, ${String(availableParallelism())} × ${cpus()[0]?.model ?? 'CPU'}; ${loadLine}.`,
      '',
      '```',
      ...lines,
      '```',
      '',
    ])
    out('table written to bench/README.md')
  }
  const dir = join(import.meta.dirname, 'results')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${startedAt.toISOString().replace(/[:.]/g, '-')}.json`)
  const host = { node: process.version, cpus: availableParallelism(), cpuModel: cpus()[0]?.model ?? '' }
  writeFileSync(
    file,
    `${JSON.stringify({ startedAt: startedAt.toISOString(), host, settings, rows: results, failures }, null, 2)}\n`,
  )
  out(`\nresults: ${file}`)
  return failures.length > 0 ? 1 : 0
}

process.on('exit', signalAllChildren)
// Once a signal is stopping the run, the benchmark it interrupted (failing as its servers go) must
// not exit first with its own code: the signal's handler ends the process when everything stopped.
let signalled = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    signalled = true
    process.stderr.write(`${signal}: stopping servers...\n`)
    void stopAllChildren().finally(() => process.exit(130))
  })
}
main().then(
  (code) => (signalled ? undefined : process.exit(code)),
  async (err: unknown) => {
    if (signalled) return
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    await stopAllChildren()
    process.exit(1)
  },
)
