import { monitorEventLoopDelay } from 'node:perf_hooks'
import { jetstream } from '@nats-io/jetstream'
import { scheduleActorFactory } from '../../actors/schedule/actor.ts'
import { startActorHost } from '../../actors/runtime/host.ts'
import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { natsNames } from '../../src/platform/nats-names.ts'

/*
 * An actor host running the schedule actor, as its own process (for kill -9). Env: NATS_URL,
 * NATS_PREFIX, NODE_ID, LEASE_TTL_MS, TICK_MS (lease tick; default TTL/5). Prints `ready` once started; SIGTERM prints `stall <ms>` (its worst event-loop delay) and hands off gracefully.
 */
const env = (k: string): string => process.env[k] ?? ''
const log = createLogger({ level: 'warn' })
const config = loadConfig({
  NODE_ENV: 'test',
  NATS_URL: env('NATS_URL'),
  NATS_PREFIX: env('NATS_PREFIX'),
  SECRET_KEY: 'x'.repeat(40),
  ENCRYPTION_KEY: 'y'.repeat(40),
  DATABASE_PASSWORD: 'unused',
  SUPERADMIN_EMAIL: 'admin@test.local',
  LOG_LEVEL: 'warn',
})
const nc = await connectNats(env('NATS_URL'), `schedule-host-${env('NODE_ID')}`, log)
const names = natsNames(env('NATS_PREFIX'))
const host = await startActorHost({
  nc,
  names,
  nodeId: env('NODE_ID'),
  actors: [await scheduleActorFactory({ nc, js: jetstream(nc), names, config, log })],
  log,
  leaseTtlMs: Number(env('LEASE_TTL_MS')),
  ackWaitMs: 2000,
  ...(env('TICK_MS') === '' ? {} : { tickMs: Number(env('TICK_MS')) }),
  timerMs: 100,
})
process.stdout.write('ready\n')
// how late this process's timers ran at worst (CPU starvation), reported when it stops
const loop = monitorEventLoopDelay({ resolution: 20 })
loop.enable()
process.on('SIGTERM', () => {
  process.stdout.write(`stall ${String(Math.round(loop.max / 1e6))}\n`)
  void host
    .stop()
    .then(() => nc.drain())
    .finally(() => process.exit(0))
})
