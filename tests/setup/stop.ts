import { existsSync, rmSync } from 'node:fs'
import { stopByPid } from '../../src/platform/local-services.ts'
import { readServices, SERVICES_FILE } from './services.ts'

/* tap `after` script: stops what start.ts started and removes its data. */
if (existsSync(SERVICES_FILE)) {
  const s = readServices()
  await stopByPid(s.pgPid, 'SIGINT')
  await stopByPid(s.natsPid, 'SIGTERM')
  rmSync(s.dir, { recursive: true, force: true })
  rmSync(SERVICES_FILE, { force: true })
}
