import type { NatsConnection } from '@nats-io/transport-node'
import { natsNames } from '../../platform/nats-names.ts'
import { connectEvents, type NatsCredentials } from './connect.ts'
import { deleteDurable } from './durable.ts'

/*
 * Moving a durable: delete it, and the next subscribeExecutionEvents creates it again at its
 * `start` (a time, a sequence, 'all', 'new'). Run it with the service stopped — a running
 * subscription on the deleted durable ends (its `closed` settles with the error). Handled events
 * that a replay delivers again are skipped by the de-dup store: to handle them again, clear the
 * store too (remove the file of the default one).
 */
export interface ResetOptions {
  servers?: string | readonly string[]
  credentials?: NatsCredentials
  connection?: NatsConnection
  prefix?: string
  durable: string
}

/** Deletes the durable (true when it existed). */
export async function resetDurable(o: ResetOptions): Promise<boolean> {
  if ((o.connection === undefined) === (o.servers === undefined))
    throw new Error('give either servers (and credentials) or a connection')
  const names = natsNames(o.prefix ?? '')
  const nc = o.connection ?? (await connectEvents(o.servers ?? '', o.credentials, `events-client reset ${o.durable}`))
  try {
    return await deleteDurable(nc, names, o.durable)
  } finally {
    if (o.connection === undefined) await nc.drain().catch(() => undefined)
  }
}
