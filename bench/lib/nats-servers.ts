import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { findNatsServer } from '../../src/platform/local-services.ts'

/*
 * Which nats-server binary the NATS-bound benchmarks run on. `npm run bench -- queue --nats=both`
 * (or BENCH_NATS=both) runs each benchmark marked `nats: true` once per server, its rows labelled
 * with the server's version, so every ratio compares rows measured on the same server. The names:
 * `current` (the pinned current release: BENCH_NATS_CURRENT, default /tmp/natsbuild/nats-server),
 * `debian` (the distribution's package, /usr/sbin/nats-server), `both` (current, then debian), or a
 * path to a binary; several separated by commas. Without a choice, the server the platform itself
 * would start (NATS_SERVER_BIN, else the first found: src/platform/local-services.ts).
 */
export interface NatsServerChoice {
  /** The binary, passed to the server children as NATS_SERVER_BIN (startNats reads it). */
  bin: string
  /** `nats 2.15.3`: appended to the benchmark's name in its rows. */
  label: string
  version: string
}

export const CURRENT_NATS_DEFAULT = '/tmp/natsbuild/nats-server'
export const DEBIAN_NATS = '/usr/sbin/nats-server'

/** The `--nats=` argument (the last one wins) or BENCH_NATS; the other arguments are benchmark names. */
export function natsOption(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): { spec: string | undefined; names: string[] } {
  let spec = env['BENCH_NATS'] === '' ? undefined : env['BENCH_NATS']
  const names: string[] = []
  for (const a of argv) {
    if (a.startsWith('--nats=')) spec = a.slice('--nats='.length)
    else names.push(a)
  }
  return { spec, names }
}

/** The binaries a spec names, in order, without repeats (`both` = current, debian). */
export function natsBinaries(spec: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const current = env['BENCH_NATS_CURRENT'] ?? CURRENT_NATS_DEFAULT
  const bins = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .flatMap((s) =>
      s === 'both' ? [current, DEBIAN_NATS] : s === 'current' ? [current] : s === 'debian' ? [DEBIAN_NATS] : [s],
    )
  return [...new Set(bins)]
}

/** `2.15.3` from `nats-server --version` (prints `nats-server: v2.15.3`). */
export function natsVersion(bin: string): string {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 })
  const m = /v?(\d+\.\d+\.\d+\S*)/.exec(`${r.stdout}${r.stderr}`)
  if (r.status !== 0 || m?.[1] === undefined) throw new Error(`${bin} --version failed: ${r.stderr || r.stdout}`)
  return m[1]
}

/** The servers to run on: the spec's binaries, or the platform's default server when there is no spec. */
export function natsServers(spec: string | undefined): NatsServerChoice[] {
  const bins = spec === undefined ? [findNatsServer()].filter((b): b is string => b !== undefined) : natsBinaries(spec)
  // no server at all: fine for the benchmarks that need none (a nats one fails when it starts)
  if (bins.length === 0 && spec !== undefined) throw new Error(`--nats=${spec} names no server`)
  return bins.map((bin) => {
    if (!existsSync(bin)) throw new Error(`nats-server ${bin} does not exist (--nats / BENCH_NATS, BENCH_NATS_CURRENT)`)
    const version = natsVersion(bin)
    return { bin, version, label: `nats ${version}` }
  })
}

/** `[2, 15, 3]`, for checks such as "at least 2.12". */
export const versionParts = (version: string): number[] =>
  version
    .split(/[.-]/)
    .slice(0, 3)
    .map((p) => Number.parseInt(p, 10) || 0)

export function versionAtLeast(version: string, min: string): boolean {
  const a = versionParts(version)
  const b = versionParts(min)
  for (let i = 0; i < 3; i++) {
    const x = a[i] ?? 0
    const y = b[i] ?? 0
    if (x !== y) return x > y
  }
  return true
}
