import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** What tests/setup/start.ts started for this test run (shared by every test file). */
export interface TestServices {
  natsUrl: string
  natsPid: number
  /** Postgres URL without a database name. */
  pgBase: string
  pgPid: number
  /** Migrated database each test file's database is copied from. */
  template: string
  dir: string
}

/*
 * Keyed by the tap runner's pid (the parent of the before/after scripts and of every test file), so
 * two test runs on one machine — say, two engineers' `npx tap <file>` — each get their own servers
 * and neither's after-script stops the other's.
 */
export const RUN_KEY = String(process.ppid)
export const SERVICES_FILE = join(import.meta.dirname, '..', '..', '.tap', `services-${RUN_KEY}.json`)
export const SERVICES_DIR = join(import.meta.dirname, '..', '..', '.tap', `services-${RUN_KEY}`)

export function readServices(): TestServices {
  if (!existsSync(SERVICES_FILE))
    throw new Error(
      `${SERVICES_FILE} missing: run the tests through tap (npm test), whose before-script starts NATS and Postgres`,
    )
  return JSON.parse(readFileSync(SERVICES_FILE, 'utf8')) as TestServices
}
