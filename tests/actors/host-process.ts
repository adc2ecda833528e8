import pg from 'pg'
import { startActorHost } from '../../actors/runtime/host.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { counterActor } from './counter-actor.ts'

/*
 * An actor host as its own process, for the takeover tests (kill -9). Env: NATS_URL, NATS_PREFIX,
 * TEST_DATABASE_URL, NODE_ID, LEASE_TTL_MS, ACK_WAIT_MS (TICKS=1: a line per tick). Prints `ready` once started; SIGTERM
 * stops it gracefully (hand-off).
 */
const env = (k: string): string => process.env[k] ?? ''
const onTick = () => {
  let n = 0
  return (owned: readonly string[]) => void process.stdout.write(`tick ${String(++n)} ${String(owned.length)}\n`)
}
const log = createLogger({ level: 'warn' })
const nc = await connectNats(env('NATS_URL'), `actor-host-${env('NODE_ID')}`, log)
const db = new pg.Pool({ connectionString: env('TEST_DATABASE_URL'), max: 4 })
db.on('error', () => undefined)
const host = await startActorHost({
  nc,
  names: natsNames(env('NATS_PREFIX')),
  nodeId: env('NODE_ID'),
  actors: [counterActor(db, env('NODE_ID'))],
  log,
  leaseTtlMs: Number(env('LEASE_TTL_MS')),
  ackWaitMs: Number(env('ACK_WAIT_MS')),
  // TICKS=1: one `tick <n> <partitions owned>` line after each tick (tests/actors/scaling.test.ts)
  ...(env('TICKS') === '1' ? { onTick: onTick() } : {}),
})
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  void host
    .stop()
    .then(() => nc.drain())
    .then(() => db.end())
    .finally(() => process.exit(0))
})
