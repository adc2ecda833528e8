import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'

/*
 * A real headless browser for tests: Debian's `chromium` (installed with apt when running as root
 * and missing), driven by playwright-core, with a fresh profile directory per launch and the
 * background services off so a test never reaches the network.
 */
export const CHROMIUM = '/usr/bin/chromium'

/** Makes sure chromium is installed; returns why it cannot be (the caller skips), or null. */
export function ensureChromium(): string | null {
  if (existsSync(CHROMIUM)) return null
  if (process.getuid?.() !== 0) return 'chromium is not installed (Debian package; install as root)'
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const install = () =>
    spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 600_000,
    })
  let r = install()
  if (r.status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { env, stdio: 'ignore', timeout: 300_000 })
    r = install()
  }
  return r.status === 0 && existsSync(CHROMIUM)
    ? null
    : `apt-get install chromium failed: ${r.stderr.toString().trim().slice(-500)}`
}

/** A browser context on a fresh profile; closing it removes the profile. */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  })
  return {
    context,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
