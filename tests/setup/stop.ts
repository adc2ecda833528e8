import { existsSync, lstatSync, realpathSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { stopByPid } from '../../src/platform/local-services.ts'
import { readServices, SERVICES_FILE } from './services.ts'

/* tap `after` script: stops what start.ts started and removes its data. */
if (existsSync(SERVICES_FILE)) {
  const s = readServices()
  await stopByPid(s.pgPid, 'SIGINT')
  await stopByPid(s.natsPid, 'SIGTERM')
  // As root, the cluster may live outside the tree (local-services links it from <dir>/pg).
  const pgDir = join(s.dir, 'pg')
  if (existsSync(pgDir) && lstatSync(pgDir).isSymbolicLink())
    rmSync(realpathSync(pgDir), { recursive: true, force: true })
  rmSync(s.dir, { recursive: true, force: true })
  rmSync(SERVICES_FILE, { force: true })
}
