import { join, resolve } from 'node:path'
import { ensureConsoleBuild } from '../console/build.ts'
import { startConsoleServer, type ConsoleServer } from '../console/server.ts'
import { publicBase } from '../files/handlers.ts'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'

/** Where the console's build lives: CONSOLE_BUILD_DIR (the image's, made when it was built), else DATA_DIR/console. */
export const consoleBuildDir = (config: Config): string =>
  config.CONSOLE_BUILD_DIR !== '' ? resolve(config.CONSOLE_BUILD_DIR) : join(config.DATA_DIR, 'console')

/**
 * The console role (docs/console.md): builds the console when its build is stale (into
 * consoleBuildDir) and serves it on CONSOLE_PORT, proxying to CONSOLE_API_URL — or, in a process
 * with the gateway role (`npm start`), to that gateway on loopback. No database, no NATS.
 */
export async function startConsoleRole(config: Config, log: Logger, gatewayPort?: number): Promise<ConsoleServer> {
  if (config.CONSOLE_PORT === 0)
    throw new Error('ROLES includes console but CONSOLE_PORT is 0 (0 turns the console off)')
  const apiUrl =
    config.CONSOLE_API_URL !== ''
      ? config.CONSOLE_API_URL.replace(/\/+$/, '')
      : gatewayPort !== undefined
        ? `http://127.0.0.1:${String(gatewayPort)}`
        : undefined
  if (apiUrl === undefined)
    throw new Error('ROLES=console needs CONSOLE_API_URL (the gateway to proxy to) when this process has no gateway')
  const clog = log.child({ mod: 'console' })
  const build = await ensureConsoleBuild(consoleBuildDir(config), clog)
  // component previews load from the API's origin as a browser reaches it: the public base, else
  // (development) the API address itself, with localhost for a loopback one
  const apiPublicUrl = publicBase(config) || apiUrl.replace('//127.0.0.1:', '//localhost:')
  return startConsoleServer({
    host: config.HOST,
    port: config.CONSOLE_PORT,
    dir: build.dir,
    apiUrl,
    apiPublicUrl,
    refreshDays: config.REFRESH_TOKEN_EXPIRE_DAYS,
    trustedProxies: config.TRUSTED_PROXIES,
    log: clog,
  })
}
