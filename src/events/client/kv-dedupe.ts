import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm, type KV } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import type { NatsNames } from '../../platform/nats-names.ts'
import type { DedupeStore } from './dedupe.ts'

/*
 * The default de-dup store: the handled keys in the NATS key-value bucket `EVENTS_DEDUPE` (with
 * NATS_PREFIX: `<prefix>_EVENTS_DEDUPE`), one key per event, `<durable>.<execution id>.<revision>`,
 * so consumers with different durables keep apart in one bucket. The bucket keeps a key 25 hours:
 * the EVENTS stream keeps an event 24, so no copy of an event can come after its key is gone.
 * The first consumer to need the bucket creates it (the `events` user may, and only this one:
 * eventsPermissions in src/platform/nats-credentials.ts).
 */
export const DEDUPE_BUCKET = 'EVENTS_DEDUPE'
export const DEDUPE_TTL_MS = 25 * 3600 * 1000

async function openBucket(nc: NatsConnection, names: NatsNames): Promise<KV> {
  return new Kvm(jetstream(nc)).create(names.bucket(DEDUPE_BUCKET), { history: 1, ttl: DEDUPE_TTL_MS })
}

export async function kvDedupe(nc: NatsConnection, names: NatsNames, durable: string): Promise<DedupeStore> {
  const kv = await openBucket(nc, names)
  return {
    async has(key) {
      const e = await kv.get(`${durable}.${key}`)
      return e !== null && e.operation === 'PUT'
    },
    async add(key) {
      await kv.put(`${durable}.${key}`, '')
    },
  }
}

/** Drops every key a durable recorded (after a reset, to handle the replayed events again). */
export async function forgetDedupeKeys(nc: NatsConnection, names: NatsNames, durable: string): Promise<void> {
  const bucket = names.bucket(DEDUPE_BUCKET)
  const jsm = await jetstreamManager(nc)
  const exists = await jsm.streams.info(`KV_${bucket}`).then(
    () => true,
    () => false,
  )
  if (exists) await jsm.streams.purge(`KV_${bucket}`, { filter: `$KV.${bucket}.${durable}.>` })
}
