import { createWriteStream } from 'node:fs'
import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { startPlatform } from '../../src/main.ts'

/*
 * A worker process (ROLES=workers: sandbox pool, shared workers, job pools) of its own, for the
 * pool actor tests (kill -9, SIGSTOP). Env: NATS_URL, NATS_PREFIX, DATABASE_URL, SECRET_KEY,
 * ENCRYPTION_KEY plus any setting (SANDBOX_MIN_SIZE, QUEUE_HEARTBEAT_SECONDS, …). Prints `ready`.
 */
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'test',
  ROLES: 'workers',
  PORT: '0',
  DATABASE_PASSWORD: 'unused',
  SUPERADMIN_EMAIL: 'admin@test.local',
})
// logs at LOG_LEVEL (default warn) to stderr — the test reads stdout for `ready` — or appended to
// the file POOL_WORKER_LOG (the test passes both through: POOL_TEST_LOG_LEVEL, POOL_WORKER_LOG)
const platform = await startPlatform(
  config,
  createLogger({
    level: process.env['LOG_LEVEL'] ?? 'warn',
    destination:
      process.env['POOL_WORKER_LOG'] !== undefined
        ? createWriteStream(process.env['POOL_WORKER_LOG'], { flags: 'a' })
        : process.stderr,
  }),
)
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  void platform.close().then(() => process.exit(0))
})
