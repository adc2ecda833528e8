import type { NatsConnection } from '@nats-io/transport-node'

/*
 * How many replicas the streams and buckets a process creates get (NATS_STREAM_REPLICAS): 1 on a
 * single server, 3 on a hub cluster (docs/multi-region.md). Kept per connection, set once where
 * the connection is made (src/roles/infrastructure.ts), so every creation site — provisioning,
 * the job and actor layouts, the blob store, the webhooks bucket — reads it from the `nc` it
 * already holds, and several platforms in one process (the tests) each keep their own.
 */
const byConnection = new WeakMap<NatsConnection, number>()

export function setStreamReplicas(nc: NatsConnection, replicas: number): void {
  byConnection.set(nc, replicas)
}

/** The replicas of a stream or bucket created on `nc` (1 unless set). */
export function streamReplicasOf(nc: NatsConnection): number {
  return byConnection.get(nc) ?? 1
}
