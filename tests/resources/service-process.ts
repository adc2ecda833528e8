import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { startPlatform } from '../../src/main.ts'

/*
 * The platform's resources role as a process of its own, for the cross-process cache test. Env:
 * NATS_URL, NATS_PREFIX, DATABASE_URL, SECRET_KEY, ENCRYPTION_KEY. Prints `ready`.
 */
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'test',
  ROLES: 'resources',
  PORT: '0',
  DATABASE_PASSWORD: 'unused',
  SUPERADMIN_EMAIL: 'admin@test.local',
})
const platform = await startPlatform(config, createLogger({ level: 'warn' }))
process.stdout.write('ready\n')
process.on('SIGTERM', () => {
  void platform.close().then(() => process.exit(0))
})
