import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** What tests/setup/start.ts started for this test run (shared by every test file). */
export interface TestServices {
  natsUrl: string
  natsPid: number
  /** The nats-server binary started and its version (the compatibility pass runs Debian's 2.9.10). */
  natsBin: string
  natsVersion: string | undefined
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
/**
 * TEST_SERVICES_NAME names a pass of tests/run.sh (`compat`: the run on nats-server 2.9.10): its
 * services file and directory carry the name, so two passes never share or stop each other's.
 */
const RUN_NAME = (process.env['TEST_SERVICES_NAME'] ?? '').replace(/[^a-z0-9-]/gi, '')
const STEM = RUN_NAME === '' ? `services-${RUN_KEY}` : `services-${RUN_NAME}-${RUN_KEY}`
export const SERVICES_FILE = join(import.meta.dirname, '..', '..', '.tap', `${STEM}.json`)
export const SERVICES_DIR = join(import.meta.dirname, '..', '..', '.tap', STEM)

export function readServices(): TestServices {
  if (!existsSync(SERVICES_FILE))
    throw new Error(
      `${SERVICES_FILE} missing: run the tests through tap (npm test), whose before-script starts NATS and Postgres`,
    )
  return JSON.parse(readFileSync(SERVICES_FILE, 'utf8')) as TestServices
}
