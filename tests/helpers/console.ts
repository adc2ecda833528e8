import { join } from 'node:path'
import { hashPassword } from '../../src/auth/password.ts'
import { ensureConsoleBuild } from '../../src/console/build.ts'
import { startConsoleServer, type ConsoleServer } from '../../src/console/server.ts'
import { createLogger } from '../../src/kernel/log.ts'
import type { TestPlatform } from './env.ts'

/*
 * The console in front of a test platform: built once per checkout into .tap/console-build (when
 * stale; concurrent test files share it, the build is renamed into place) and served on a random
 * port of 127.0.0.1, proxying to the platform's gateway.
 */
export const CONSOLE_BUILD_DIR = join(import.meta.dirname, '..', '..', '.tap', 'console-build')

export async function startTestConsole(
  t: { teardown(fn: () => unknown): void },
  env: TestPlatform,
  options: { trustedProxies?: string } = {},
): Promise<{ base: string; server: ConsoleServer }> {
  const log = createLogger({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' })
  const build = await ensureConsoleBuild(CONSOLE_BUILD_DIR, log)
  const server = await startConsoleServer({
    host: '127.0.0.1',
    port: 0,
    dir: build.dir,
    apiUrl: env.base,
    apiPublicUrl: env.base,
    refreshDays: env.config.REFRESH_TOKEN_EXPIRE_DAYS,
    trustedProxies: options.trustedProxies ?? '',
    log,
  })
  t.teardown(() => server.close())
  return { base: `http://127.0.0.1:${String(server.port)}`, server }
}

/** A user of the platform with a password (the password modes' sign-in). */
export async function userWithPassword(
  env: TestPlatform,
  email: string,
  password: string,
  roles?: string[],
): Promise<{ id: string; token: string }> {
  const u = await env.createUser(email, roles)
  await env.sql('update users set password_hash = $1 where id = $2', [await hashPassword(password), u.id])
  return u
}
