import {
  AckPolicy,
  DeliverPolicy,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
} from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import type { Logger } from '../kernel/log.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { streamReplicasOf } from '../platform/stream-replicas.ts'
import { POOLS, type Pool } from './job-state.ts'

/*
 * The job system's part of the NATS layout, created or updated idempotently at start-up by every
 * process that runs a job role: one durable pull consumer per pool on JOBS (non-overlapping
 * filters, as a work-queue stream requires), the durable `pg-mirror` consumer on the JOB_STATE
 * bucket's stream, the EVENTS stream backend services read execution events from, and the
 * JOB_RESULTS object store.
 */
export const poolConsumerName = (pool: Pool): string => `pool-${pool}`
export const MIRROR_CONSUMER = 'pg-mirror'

export interface JobLayoutOptions {
  ackWaitMs: number
  resultTtlMs: number
}

export async function provisionJobs(
  nc: NatsConnection,
  names: NatsNames,
  opts: JobLayoutOptions,
  log: Logger,
): Promise<void> {
  const jsm = await jetstreamManager(nc)
  const jobs = names.stream('JOBS')
  for (const pool of POOLS) {
    const config: Partial<ConsumerConfig> = {
      durable_name: poolConsumerName(pool),
      filter_subject: names.subject(`jobs.${pool}.>`),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      // Attempts are counted by the application: on 2.9 a max-delivered work-queue message stays
      // in the stream forever.
      max_deliver: -1,
      ack_wait: opts.ackWaitMs * 1e6,
      max_ack_pending: 10_000,
      max_waiting: 4_096,
    }
    const existing = await jsm.consumers.info(jobs, poolConsumerName(pool)).catch(() => null)
    if (existing === null) await jsm.consumers.add(jobs, config)
    else if (existing.config.ack_wait !== config.ack_wait)
      await jsm.consumers.update(jobs, poolConsumerName(pool), { ack_wait: config.ack_wait })
  }
  const kvStream = `KV_${names.bucket('JOB_STATE')}`
  if ((await jsm.consumers.info(kvStream, MIRROR_CONSUMER).catch(() => null)) === null) {
    await jsm.consumers.add(kvStream, {
      durable_name: MIRROR_CONSUMER,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      max_deliver: -1,
      ack_wait: 30e9,
      max_ack_pending: 1_000,
    })
  }
  const events = names.stream('EVENTS')
  const eventsConfig = {
    name: events,
    subjects: [names.subject('events.>')],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: 24 * 3600 * 1e9,
    duplicate_window: 10 * 60 * 1e9,
    num_replicas: streamReplicasOf(nc),
  }
  if ((await jsm.streams.info(events).catch(() => null)) === null) await jsm.streams.add(eventsConfig)
  await new Objm(nc).create(names.bucket('JOB_RESULTS'), {
    ttl: opts.resultTtlMs * 1e6,
    storage: StorageType.File,
    replicas: streamReplicasOf(nc),
  })
  log.debug({ stream: jobs }, 'job consumers provisioned')
}
