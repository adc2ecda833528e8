import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { Value } from '@sinclair/typebox/value'
import { SandboxNodeInfo, type PoolDesired, type PoolKey } from '../schemas/sandbox-pool.ts'
import type { Member, ProcessStats } from '../src/platform/heartbeat.ts'
import type { NatsConnection } from '../src/platform/nats.ts'
import type { NatsNames } from '../src/platform/nats-names.ts'

/*
 * What a worker process does to converge to a pool actor's desired state (pure, so it can be read
 * and tested apart from the wiring in control.ts), and the live worker processes among which a
 * pool's target is split.
 */

/** Split `total` over `n` nodes as evenly as possible (the first ones take the remainder). */
export const splitTarget = (total: number, n: number, i: number): number =>
  Math.floor(total / n) + (i < total % n ? 1 : 0)

/** This node's share of `target`: the nodes are ordered by id, so every node computes the same split. */
export function shareOf(target: number, nodes: readonly string[], me: string): number {
  const all = [...new Set([...nodes, me])].sort()
  return splitTarget(target, all.length, all.indexOf(me))
}

export interface LiveNode {
  node: string
  info: SandboxNodeInfo
  last_seen: string
  /** The worker process's CPU and memory, from its beat (absent from older versions'). */
  process?: ProcessStats
}

/** The worker processes of the platform as their heartbeats show them. */
export interface NodeDirectory {
  /**
   * The processes whose last beat is younger than three of their own intervals (a process killed
   * with -9 leaves its key in WORKERS for the bucket TTL, 30 s; it stops counting sooner). For
   * `sandbox`, only processes that have a warm pool (SANDBOX_EXECUTOR=pool).
   */
  live(pool?: PoolKey, now?: number): Promise<LiveNode[]>
}

/**
 * Lists the `sandbox.<node>` heartbeats by asking the WORKERS stream which subjects it holds
 * (stream info with a subject filter) and reading each key. Not `kv.keys()`: on nats-server 2.9
 * its listing consumer was seen here to hang for good while the keys it lists are rewritten
 * several times a second, which these keys are.
 */
export async function openNodeDirectory(nc: NatsConnection, names: NatsNames): Promise<NodeDirectory> {
  const jsm = await jetstreamManager(nc)
  const bucket = names.bucket('WORKERS')
  const kv = await new Kvm(nc).open(bucket)
  const prefix = `$KV.${bucket}.`
  return {
    async live(pool, now = Date.now()) {
      const info = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}sandbox.>` })
      const keys = Object.keys(info.state.subjects ?? {}).map((s) => s.slice(prefix.length))
      const entries = await Promise.all(keys.map((k) => kv.get(k)))
      const out: LiveNode[] = []
      for (const e of entries) {
        if (e === null || e.operation !== 'PUT' || e.length === 0) continue
        const m = e.json<Member>()
        if (!Value.Check(SandboxNodeInfo, m.info)) continue
        if (now - Date.parse(m.last_seen) > 3 * m.info.interval_ms) continue
        if (pool === 'sandbox' && m.info.executor !== 'pool') continue
        out.push({
          node: m.nodeId,
          info: m.info,
          last_seen: m.last_seen,
          ...(m.process === undefined ? {} : { process: m.process }),
        })
      }
      return out.sort((a, b) => a.node.localeCompare(b.node))
    },
  }
}

/** What this process has applied of one pool's desired state. */
export interface Applied {
  /** The desired state's seq last applied (-1: none yet, the process just started). */
  seq: number
  generation: number
  share: number | null
  /** The package set of the last applied state that named one (undefined: the one found at start). */
  packages: string | null | undefined
  reloads: number
}

export interface Plan {
  /** The requests to report on (they arrived since the last application). */
  requestIds: string[]
  /** Set the package directory first (null: none). */
  packages?: string | null
  /** Recycle the idle members once. */
  reload: boolean
  /** Set the pool to this size. */
  scale: number | null
  /** Names to destroy and replace. */
  restarts: string[]
}

/**
 * The plan for one desired state. A process that just started takes the generation as it finds it
 * (its members are new) and no older restarts (their members were elsewhere), but does take the
 * package set and its share. Scaling happens when the share moved (the target, or the live
 * processes, changed) or a scale was asked, so a reload does not also trim a pool that grew
 * under load.
 */
export function plan(d: PoolDesired, a: Applied, share: number | null, packagesNow: string | undefined): Plan {
  const first = a.seq < 0
  const fresh = d.requests.filter((r) => r.seq > a.seq)
  // compared with what this pool last applied (else what the process started with), so the two
  // pools naming different sets one after the other cannot make each other reload again and again
  const wantPackages = d.packages_dir
  const baseline = a.packages !== undefined ? a.packages : (packagesNow ?? null)
  const packagesChanged = wantPackages !== undefined && wantPackages !== baseline
  const scaleAsked = fresh.some((r) => r.op === 'scale')
  return {
    requestIds: fresh.map((r) => r.id),
    ...(packagesChanged ? { packages: wantPackages } : {}),
    reload: first ? packagesChanged : d.generation > a.generation || packagesChanged,
    scale: share !== null && (share !== a.share || scaleAsked) ? share : null,
    restarts: first ? [] : d.restarts.filter((r) => r.seq > a.seq).map((r) => r.name),
  }
}
