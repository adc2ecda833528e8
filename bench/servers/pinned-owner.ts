import { jetstream, type ConsumerMessages } from '@nats-io/jetstream'
import { createLogger } from '../../src/kernel/log.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/*
 * A would-be partition owner for bench/nats-features (priority groups): pulls from every
 * partition's consumer of stream PIN with priority group `owner` (the consumers' policy is
 * `pinned_client`, so the server delivers a partition's messages to one puller, the pinned one, and
 * moves the pin when that one stops pulling for `priority_timeout`). Each message it gets is
 * announced on `pinbench.seen.<partition>` with this host's id, then acked, except a message whose
 * key starts with `hold` (work in flight when the process dies). Pull requests expire after
 * PULL_EXPIRES_MS: the server moves the pin of a client that sent no pull for `priority_timeout`,
 * so an idle owner must pull more often than that. Env: NATS_URL, NODE_ID, PARTITIONS,
 * PULL_EXPIRES_MS.
 */
try {
  const env = (k: string) => process.env[k] ?? ''
  const log = createLogger({ level: 'warn' })
  const nodeId = env('NODE_ID')
  const nc = await connectNats(env('NATS_URL'), `bench-pinned-${nodeId}`, log)
  const js = jetstream(nc)
  const all: ConsumerMessages[] = []
  for (let p = 0; p < Number(env('PARTITIONS')); p++) {
    const consumer = await js.consumers.get('PIN', `pin-p${String(p).padStart(3, '0')}`)
    const messages = await consumer.consume({
      max_messages: 64,
      group: 'owner',
      expires: Number(env('PULL_EXPIRES_MS')) || 30_000,
    })
    all.push(messages)
    void (async () => {
      for await (const m of messages) {
        nc.publish(`pinbench.seen.${String(p)}`, nodeId)
        if (!m.subject.slice(m.subject.lastIndexOf('.') + 1).startsWith('hold')) m.ack()
      }
    })()
  }
  onShutdown(async () => {
    for (const m of all) await m.close()
    await nc.drain()
  })
  reportReady({ port: 0 })
} catch (err) {
  reportFailure(err)
}
