import { jetstream } from '@nats-io/jetstream'
import { dbTriggerActorFactory } from '../../actors/db-trigger/actor.ts'
import { startActorHost } from '../../actors/runtime/host.ts'
import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { natsNames } from '../../src/platform/nats-names.ts'

/*
 * An actor host running the db-trigger actor, as its own process (for kill -9). It has no database:
 * polls go to the test platform's resource service over NATS. Env: NATS_URL, NATS_PREFIX, NODE_ID,
 * LEASE_TTL_MS, TICK_MS (lease tick; default TTL/5), DB_TRIGGER_BACKOFF_MAX_SECONDS. Prints `ready`
 * once started; SIGTERM hands off gracefully.
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
  ...(env('DB_TRIGGER_BACKOFF_MAX_SECONDS') === ''
    ? {}
    : { DB_TRIGGER_BACKOFF_MAX_SECONDS: env('DB_TRIGGER_BACKOFF_MAX_SECONDS') }),
})
const nc = await connectNats(env('NATS_URL'), `db-trigger-host-${env('NODE_ID')}`, log)
const names = natsNames(env('NATS_PREFIX'))
const host = await startActorHost({
  nc,
  names,
  nodeId: env('NODE_ID'),
  actors: [await dbTriggerActorFactory({ nc, js: jetstream(nc), names, config, log })],
  log,
  leaseTtlMs: Number(env('LEASE_TTL_MS')),
  ackWaitMs: 2000,
  ...(env('TICK_MS') === '' ? {} : { tickMs: Number(env('TICK_MS')) }),
  timerMs: 100,
})
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  void host
    .stop()
    .then(() => nc.drain())
    .finally(() => process.exit(0))
})
