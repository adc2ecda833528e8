import type { KV } from '@nats-io/kv'
import { listMembers } from '../../src/platform/heartbeat.ts'
import { isWrongLastSequence } from '../../src/platform/jetstream.ts'
import type { HostEnv } from './partition.ts'

/*
 * Partition ownership: every tick a host lists the live hosts (heartbeats in
 * WORKERS, role `actors`) and computes the rendezvous owner of each partition. For the ones it
 * should own it creates a lease key in ACTOR_LEASES (CAS create: one winner), renews it by CAS
 * update, and gives it up by CAS delete when another host should own it. The bucket TTL is the
 * lease TTL: a dead host's leases vanish after it. A host stops working a partition at
 * `renewal sent + TTL − margin` on its own monotonic clock, before the server could let anyone
 * else in, so two hosts never run one partition.
 */

/** How long before the server-side expiry a host stops: a third of the TTL, at least one tick. */
export const leaseMargin = (leaseTtlMs: number, tickMs: number): number => Math.max(tickMs, Math.floor(leaseTtlMs / 3))

/** The monotonic time until which a lease renewed (or created) at `sentAt` may be worked. */
export const leaseDeadline = (env: HostEnv, sentAt: number): number => sentAt + env.leaseTtlMs - env.margin

/**
 * The hosts that beat within the last three ticks and are not draining (their beat says
 * `draining`: they give their partitions up, so nobody computes them as an owner), this one
 * included unless it drains itself.
 */
export async function liveHosts(workers: KV, nodeId: string, tickMs: number, selfDraining = false): Promise<string[]> {
  const members = await listMembers(workers, 'actors')
  const now = Date.now()
  const live = members
    .filter((m) => m.nodeId !== nodeId && m.info['draining'] !== true && now - Date.parse(m.last_seen) < 3 * tickMs)
    .map((m) => m.nodeId)
  return selfDraining ? live : [...live, nodeId]
}

/** CAS create of the lease: its revision (the fencing token), or null when another host holds it. */
export async function acquireLease(env: HostEnv, leaseKey: string): Promise<number | null> {
  return env.leases.create(leaseKey, env.nodeId).catch(() => null)
}

export type Renewal = { ok: true; rev: number } | { ok: false; lost: boolean }

/**
 * CAS update of the lease; `lost` when another host holds it now (stop working the partition).
 * Through the lean writer (state-writer.ts): a host renews every lease it holds every tick.
 */
export async function renewLease(env: HostEnv, leaseKey: string, rev: number): Promise<Renewal> {
  try {
    return { ok: true, rev: await env.leaseWriter.write(leaseKey, env.nodeId, rev) }
  } catch (err) {
    env.log.warn({ err, partition: leaseKey }, 'lease renewal failed')
    return { ok: false, lost: isWrongLastSequence(err) }
  }
}

/** CAS delete: gives the partition up at once instead of letting the lease expire. */
export async function releaseLease(env: HostEnv, leaseKey: string, rev: number): Promise<void> {
  await env.leases.delete(leaseKey, { previousSeq: rev }).catch(() => undefined)
}
