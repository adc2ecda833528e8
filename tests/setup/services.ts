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

export const SERVICES_FILE = join(import.meta.dirname, '..', '..', '.tap', 'services.json')

export function readServices(): TestServices {
  if (!existsSync(SERVICES_FILE)) throw new Error(`${SERVICES_FILE} missing: run the tests through tap (npm test), whose before-script starts NATS and Postgres`)
  return JSON.parse(readFileSync(SERVICES_FILE, 'utf8')) as TestServices
}
