import { jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream'
import { Kvm, type KV } from '@nats-io/kv'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import { streamReplicasOf } from '../../src/platform/stream-replicas.ts'

/*
 * The actor layout: mailboxes on the work-queue stream ACTORS (`actor.>`, 10 min dedupe), actor
 * state in ACTOR_STATE (history 1, no TTL), partition leases in ACTOR_LEASES whose bucket TTL *is*
 * the lease TTL (2.9 has no per-key TTL). Idempotent; brings the TTL up to date.
 */
export async function provisionActors(
  nc: NatsConnection,
  names: NatsNames,
  opts: { leaseTtlMs: number },
): Promise<void> {
  const jsm = await jetstreamManager(nc)
  const stream = names.stream('ACTORS')
  if ((await jsm.streams.info(stream).catch(() => null)) === null) {
    await jsm.streams.add({
      name: stream,
      subjects: [names.subject('actor.>')],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      duplicate_window: 10 * 60 * 1e9,
      num_replicas: streamReplicasOf(nc),
    })
  }
  const kvm = new Kvm(nc)
  await openActorStates(nc, names)
  const leases = await kvm.create(names.bucket('ACTOR_LEASES'), {
    history: 1,
    ttl: opts.leaseTtlMs,
    replicas: streamReplicasOf(nc),
  })
  const status = await leases.status()
  if (status.ttl !== opts.leaseTtlMs) {
    await jsm.streams.update(status.streamInfo.config.name, {
      ...status.streamInfo.config,
      max_age: opts.leaseTtlMs * 1e6,
    })
  }
}

/**
 * ACTOR_STATE, created when missing (same settings as above): for processes that read actor state
 * without hosting actors (a worker process watching its pool actor may start before any host).
 */
export async function openActorStates(nc: NatsConnection, names: NatsNames): Promise<KV> {
  return new Kvm(nc).create(names.bucket('ACTOR_STATE'), { history: 1, replicas: streamReplicasOf(nc) })
}
