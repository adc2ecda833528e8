import { rmSync } from 'node:fs'
import { issueAccessToken } from '../../src/auth/tokens.ts'
import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { startPlatform, type Platform } from '../../src/main.ts'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/*
 * The platform under test, configured by the environment exactly like `npm start` (the bench sets
 * DATA_DIR, PORT=0, LOG_LEVEL, ROLES and, for the split layout, NATS_URL / DATABASE_URL). Reports
 * the gateway port and, when it runs the resource service, a superadmin access token. With
 * BENCH_REMOVE_DATA_DIR=1 it deletes DATA_DIR once stopped (so even a bench killed with -9 leaves
 * nothing behind).
 */
const config = loadConfig(process.env)
const log = createLogger({ level: config.LOG_LEVEL, svc: 'bench' })
const starting: Promise<Platform | undefined> = startPlatform(config, log).catch((err: unknown) => {
  reportFailure(err)
  return undefined
})
// Registered before the start completes: a stop during start-up still stops nats-server and Postgres.
onShutdown(async () => {
  await (await starting)?.close()
  if (process.env['BENCH_REMOVE_DATA_DIR'] === '1') rmSync(config.DATA_DIR, { recursive: true, force: true })
})
const platform = await starting
if (platform !== undefined) {
  try {
    const token =
      platform.superadminId === undefined
        ? undefined
        : await issueAccessToken(config.SECRET_KEY, { sub: platform.superadminId, email: config.SUPERADMIN_EMAIL }, 120)
    reportReady({
      port: platform.gateway?.port ?? 0,
      token,
      natsUrl: platform.natsUrl,
      databaseUrl: platform.databaseUrl,
    })
  } catch (err) {
    await platform.close()
    reportFailure(err)
  }
}
