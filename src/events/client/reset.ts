import type { NatsConnection } from '@nats-io/transport-node'
import { natsNames } from '../../platform/nats-names.ts'
import { connectEvents, type NatsCredentials } from './connect.ts'
import { deleteDurable } from './durable.ts'
import { forgetDedupeKeys } from './kv-dedupe.ts'

/*
 * Moving a durable: delete it, and the next subscribeExecutionEvents creates it again at its
 * `start` (a time, a sequence, 'all', 'new'). Run it with the service stopped — a running
 * subscription on the deleted durable ends (its `closed` settles with the error). Handled events
 * that a replay delivers again are skipped by the de-dup store unless `forgetHandled` drops the
 * durable's keys from the default KV store too (a store of your own is yours to clear).
 */
export interface ResetOptions {
  servers?: string | readonly string[]
  credentials?: NatsCredentials
  connection?: NatsConnection
  prefix?: string
  durable: string
  /** Also drop the durable's keys from the default KV de-dup store, so a replay handles its events again. */
  forgetHandled?: boolean
}

/** Deletes the durable (true when it existed). */
export async function resetDurable(o: ResetOptions): Promise<boolean> {
  if ((o.connection === undefined) === (o.servers === undefined))
    throw new Error('give either servers (and credentials) or a connection')
  const names = natsNames(o.prefix ?? '')
  const nc = o.connection ?? (await connectEvents(o.servers ?? '', o.credentials, `events-client reset ${o.durable}`))
  try {
    const existed = await deleteDurable(nc, names, o.durable)
    if (o.forgetHandled === true) await forgetDedupeKeys(nc, names, o.durable)
    return existed
  } finally {
    if (o.connection === undefined) await nc.drain().catch(() => undefined)
  }
}
