import { jetstream } from '@nats-io/jetstream'
import { startActorHost } from '../../actors/runtime/host.ts'
import { scheduleActorFactory } from '../../actors/schedule/actor.ts'
import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/*
 * An actor host for bench/schedules running only the schedule actor, with the platform's default
 * settings (lease TTL, tick, ACTOR_TIMER_MS, ack wait, misfire grace), as `ROLES=actors` would.
 * Env: NATS_URL, NATS_PREFIX, NODE_ID.
 */
try {
  const env = (k: string) => process.env[k] ?? ''
  const log = createLogger({ level: 'warn' })
  const config = loadConfig({
    NODE_ENV: 'development',
    NATS_URL: env('NATS_URL'),
    NATS_PREFIX: env('NATS_PREFIX'),
    SECRET_KEY: 'x'.repeat(40),
    ENCRYPTION_KEY: 'y'.repeat(40),
    DATABASE_PASSWORD: 'unused',
    LOG_LEVEL: 'warn',
  })
  const nc = await connectNats(env('NATS_URL'), `bench-schedule-host-${env('NODE_ID')}`, log)
  const names = natsNames(env('NATS_PREFIX'))
  const host = await startActorHost({
    nc,
    names,
    nodeId: env('NODE_ID'),
    actors: [await scheduleActorFactory({ nc, js: jetstream(nc), names, config, log })],
    log,
    leaseTtlMs: config.ACTOR_LEASE_TTL_SECONDS * 1000,
    ackWaitMs: config.ACTOR_ACK_WAIT_SECONDS * 1000,
    timerMs: config.ACTOR_TIMER_MS,
  })
  onShutdown(async () => {
    await host.stop()
    await nc.drain()
  })
  reportReady({ port: 0 })
} catch (err) {
  reportFailure(err)
}
