import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/*
 * Per-process CPU time from /proc/<pid>/stat: utime + stime (fields 14 and 15, in clock ticks) cover
 * every thread of the process but not its children, so each server under test runs in a process
 * of its own and helpers (nats-server, Postgres) are sampled separately as its descendants.
 */
let ticksPerSecond: number | undefined

export function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })
    const n = Number(r.stdout.trim())
    ticksPerSecond = r.status === 0 && Number.isInteger(n) && n > 0 ? n : 100
  }
  return ticksPerSecond
}

interface Stat {
  ppid: number
  ticks: number
  /** cutime + cstime: what the children it has reaped used (a sandbox's executions, Postgres backends). */
  reaped: number
}

function readStat(pid: number): Stat | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${String(pid)}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  // fields[0] is field 3 (state): ppid = field 4, utime = field 14, stime = field 15, cutime and
  // cstime = fields 16 and 17.
  return {
    ppid: Number(fields[1]),
    ticks: Number(fields[11]) + Number(fields[12]),
    reaped: Number(fields[13]) + Number(fields[14]),
  }
}

/** CPU ticks used so far by one process (all its threads); throws when it is gone. */
export function processTicks(pid: number): number {
  const s = readStat(pid)
  if (s === undefined) throw new Error(`process ${String(pid)} is gone`)
  return s.ticks
}

/** Direct children of a process (e.g. the nats-server and Postgres a platform process started). */
export function childPids(pid: number): number[] {
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (/^\d+$/.test(entry) && readStat(Number(entry))?.ppid === pid) out.push(Number(entry))
  }
  return out
}

/**
 * CPU ticks per live process: the given roots and all their descendants, each with what the
 * children it reaped used (a process that forks one child per call, as a sandbox's runner does,
 * would otherwise hide their CPU: they are gone before the next sample).
 */
export function treeTicks(roots: readonly number[]): Map<number, number> {
  const all = new Map<number, Stat>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const s = readStat(Number(entry))
    if (s !== undefined) all.set(Number(entry), s)
  }
  const out = new Map<number, number>()
  const wanted = new Set(roots)
  let grew = true
  while (grew) {
    grew = false
    for (const [pid, s] of all) {
      if (!wanted.has(pid) && wanted.has(s.ppid)) {
        wanted.add(pid)
        grew = true
      }
    }
  }
  for (const pid of wanted) {
    const s = all.get(pid)
    if (s !== undefined) out.set(pid, s.ticks + s.reaped)
  }
  return out
}

/**
 * The helpers' ticks now, for `ticksBetween`: the trees of `helperPids` and of the target's
 * children as they are at this moment (a sandbox or a Postgres backend started since the last
 * sample counts from zero), plus what the target reaped (key -1: a recycled sandbox's whole tree
 * ends there). The target's own CPU is `processTicks`, never part of this.
 */
export function helperTicks(pid: number, helperPids: readonly number[]): Map<number, number> {
  const roots = [...new Set([...helperPids, ...childPids(pid)])].filter((p) => p !== pid)
  const out = treeTicks(roots)
  out.delete(pid)
  out.set(-1, readStat(pid)?.reaped ?? 0)
  return out
}

/** Ticks spent between two `treeTicks` samples (processes born in between count from zero). */
export function ticksBetween(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0
  for (const [pid, t] of after) sum += t - (before.get(pid) ?? 0)
  return sum
}

export const ticksToMicros = (ticks: number): number => (ticks / clockTicks()) * 1e6
