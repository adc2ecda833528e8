import { startActorHost } from '../../actors/runtime/host.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'
import { tallyActor } from './tally-actor.ts'

/*
 * An actor host for bench/actors running the `tally` actor. Env: NATS_URL, NATS_PREFIX, NODE_ID, LEASE_TTL_MS, TICK_MS (optional).
 */
try {
  const env = (k: string) => process.env[k] ?? ''
  const log = createLogger({ level: 'warn' })
  const nc = await connectNats(env('NATS_URL'), `bench-actor-${env('NODE_ID')}`, log)
  const host = await startActorHost({
    nc,
    names: natsNames(env('NATS_PREFIX')),
    nodeId: env('NODE_ID'),
    actors: [tallyActor],
    log,
    leaseTtlMs: Number(env('LEASE_TTL_MS')),
    tickMs: Number(env('TICK_MS')) || undefined,
    ackWaitMs: 2000,
  })
  onShutdown(async () => {
    await host.stop()
    await nc.drain()
  })
  reportReady({ port: 0 })
} catch (err) {
  reportFailure(err)
}
