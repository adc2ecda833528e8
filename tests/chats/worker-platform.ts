import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { startPlatform } from '../../src/main.ts'

/*
 * The platform's workers role as a process of its own (real agent and function executors), for
 * the kill -9 test of a turn (with TEST_ROLES=actors,workers: an actor host that runs its turns in
 * its own workers). Env: NATS_URL, NATS_PREFIX, DATABASE_URL, SECRET_KEY, ENCRYPTION_KEY plus any
 * setting. Prints `ready`.
 */
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'test',
  ROLES: process.env['TEST_ROLES'] ?? 'workers',
  PORT: '0',
  DATABASE_PASSWORD: 'unused',
  SUPERADMIN_EMAIL: 'admin@test.local',
  SANDBOX_MIN_SIZE: '0',
  SANDBOX_MIN_IDLE: '0',
})
const platform = await startPlatform(config, createLogger({ level: 'warn' }))
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  void platform.close().then(() => process.exit(0))
})
