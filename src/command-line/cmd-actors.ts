import type { ActorHostDrain, SystemActorHosts, SystemActors } from '../../schemas/system.ts'
import { optionFlag, optionText, type ParsedArgs } from './args.ts'
import { clientOf } from './cmd-config.ts'
import type { Io } from './io.ts'

/*
 * `actors hosts|partitions|drain|undrain` over `/api/v1/system/actors…` (admin): the actor hosts and
 * the partitions each owns, with mailbox backlogs and the age of the oldest message; draining a
 * host before stopping it, and cancelling a drain.
 */

const json = (a: ParsedArgs): boolean => optionFlag(a, 'json') || optionText(a, 'output') === 'json'

/** Columns padded to their widest cell, two spaces apart. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (r: readonly string[]): string =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd()
  return `${[line(head), ...rows.map(line)].join('\n')}\n`
}

/** 1234 ms → `1.2s`, 95 000 → `1m35s`; null → `-`. */
export function age(ms: number | null): string {
  if (ms === null) return '-'
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`
  const s = Math.round(ms / 1000)
  return s < 3600
    ? `${String(Math.floor(s / 60))}m${String(s % 60).padStart(2, '0')}s`
    : `${String(Math.floor(s / 3600))}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

const num = (n: number | null): string => (n === null ? '-' : String(n))

export async function actorsHosts(a: ParsedArgs, io: Io): Promise<number> {
  const r = await clientOf(a).json<SystemActorHosts>('GET', '/api/v1/system/actors/hosts')
  if (json(a)) {
    io.out(`${JSON.stringify(r, null, 2)}\n`)
    return 0
  }
  if (r.hosts.length === 0) {
    io.out('No actor host.\n')
    return 0
  }
  io.out(
    table(
      ['NODE', 'STATE', 'PARTITIONS', 'BACKLOG', 'OLDEST', 'LAST SEEN'],
      r.hosts.map((h) => {
        const ages = h.owned.map((p) => p.oldest_age_ms).filter((x): x is number => x !== null)
        return [
          h.node_id,
          h.state,
          String(h.partitions),
          String(h.owned.reduce((n, p) => n + (p.backlog ?? 0), 0)),
          age(ages.length === 0 ? null : Math.max(...ages)),
          h.last_seen ?? '-',
        ]
      }),
    ),
  )
  return 0
}

export async function actorsPartitions(a: ParsedArgs, io: Io): Promise<number> {
  const r = await clientOf(a).json<SystemActors>('GET', '/api/v1/system/actors')
  const type = optionText(a, 'type')
  const host = optionText(a, 'host')
  if (type !== undefined && !r.types.some((x) => x.type === type)) {
    io.err(`platform actors partitions: no actor type ${type} (types: ${r.types.map((x) => x.type).join(', ')})\n`)
    return 1
  }
  const types = r.types
    .filter((x) => type === undefined || x.type === type)
    .map((x) => ({ ...x, shards: x.shards.filter((s) => host === undefined || s.owner === host) }))
  if (json(a)) {
    io.out(`${JSON.stringify({ ...r, types }, null, 2)}\n`)
    return 0
  }
  io.out(
    table(
      ['TYPE', 'PARTITION', 'OWNER', 'FENCE', 'LEASE AGE', 'BACKLOG', 'OLDEST'],
      types.flatMap((x) =>
        x.shards.map((s) => [
          x.type,
          String(s.partition),
          s.owner ?? '(none)',
          num(s.fence),
          age(s.lease_age_ms),
          num(s.backlog),
          age(s.oldest_age_ms),
        ]),
      ),
    ),
  )
  return 0
}

/** Waits until the host owns nothing (`--wait`), polling the hosts' view once a second. */
async function waitDrained(a: ParsedArgs, io: Io, nodeId: string): Promise<number> {
  const timeoutS = Number(optionText(a, 'timeout') ?? '300')
  const until = Date.now() + timeoutS * 1000
  for (;;) {
    const r = await clientOf(a).json<SystemActorHosts>('GET', '/api/v1/system/actors/hosts')
    const h = r.hosts.find((x) => x.node_id === nodeId)
    if (h === undefined || h.state === 'drained' || h.state === 'gone') {
      io.err(`${nodeId}: ${h?.state ?? 'gone'}\n`)
      return 0
    }
    if (Date.now() > until) {
      io.err(
        `platform actors drain: ${nodeId} still owns ${String(h.partitions)} partitions after ${String(timeoutS)}s\n`,
      )
      return 1
    }
    await new Promise((r) => setTimeout(r, 1000))
  }
}

export async function actorsDrain(a: ParsedArgs, io: Io): Promise<number> {
  const nodeId = a.positional[0] as string
  const r = await clientOf(a).json<ActorHostDrain>(
    'POST',
    `/api/v1/system/actors/hosts/${encodeURIComponent(nodeId)}/drain`,
  )
  if (json(a)) io.out(`${JSON.stringify(r, null, 2)}\n`)
  else io.out(`${r.node_id}: ${r.state} (drain requested at ${r.drain_requested_at ?? '-'})\n`)
  return optionFlag(a, 'wait') ? waitDrained(a, io, nodeId) : 0
}

export async function actorsUndrain(a: ParsedArgs, io: Io): Promise<number> {
  const nodeId = a.positional[0] as string
  const r = await clientOf(a).json<ActorHostDrain>(
    'POST',
    `/api/v1/system/actors/hosts/${encodeURIComponent(nodeId)}/undrain`,
  )
  if (json(a)) io.out(`${JSON.stringify(r, null, 2)}\n`)
  else io.out(`${r.node_id}: ${r.state}\n`)
  return 0
}
