import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { startJobWorkers } from '../../src/jobs/start.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import type { Pool } from '../../src/jobs/job-state.ts'
import { testExecutor } from './test-executors.ts'

/*
 * A job worker as its own process, for the failure tests (kill -9). Env: NATS_URL, NATS_PREFIX,
 * TEST_DATABASE_URL, POOLS (comma-separated), plus any queue setting. Prints `ready <nodeIds>`.
 */
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'test',
  SECRET_KEY: 'x'.repeat(32),
  ENCRYPTION_KEY: 'y'.repeat(32),
  DATABASE_PASSWORD: 'unused',
  SUPERADMIN_EMAIL: 'a@b.c',
})
const log = createLogger({ level: 'warn' })
const nc = await connectNats(config.NATS_URL, 'test-worker', log)
const exec = testExecutor(process.env['TEST_DATABASE_URL'])
const pools = (process.env['POOLS'] ?? 'fn').split(',') as Pool[]
const workers = await startJobWorkers({
  nc,
  names: natsNames(config.NATS_PREFIX),
  config,
  log,
  executors: Object.fromEntries(pools.map((p) => [p, exec])),
  replicas: 1,
})
process.stdout.write(`ready ${workers.workers.map((w) => w.nodeId).join(',')}\n`)
process.on('SIGTERM', () => {
  void workers
    .stop()
    .then(() => nc.drain())
    .then(() => process.exit(0))
})
