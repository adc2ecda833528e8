import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createLogger } from '../../src/kernel/log.ts'
import { migrate } from '../../src/platform/db.ts'
import { ensureServerPackages, startNats, startPostgres } from '../../src/platform/local-services.ts'
import { pickNatsServer } from '../../src/platform/nats-server-binary.ts'
import { prepareCurrentNatsServer } from './current-nats-server.ts'
import { SERVICES_DIR, SERVICES_FILE, type TestServices } from './services.ts'

/*
 * tap `before` script: one nats-server (JetStream) and one Postgres cluster for the whole run,
 * started as real processes (detached, stopped by tests/setup/stop.ts), plus a migrated template
 * database. Each test file then gets its own database copy and NATS prefix (tests/helpers/env.ts).
 */
const log = createLogger({ level: 'warn', svc: 'test-setup' })
const dir = SERVICES_DIR
rmSync(dir, { recursive: true, force: true })
mkdirSync(dir, { recursive: true })
// A current nats-server (built with Go once per machine when missing: tests/run.sh does it before
// the suite, this covers `npx tap <file>` on a fresh machine), else Debian's, installed when missing.
prepareCurrentNatsServer(createLogger({ level: 'silent' }), (line) => process.stdout.write(`# ${line}\n`))
ensureServerPackages(log, { buildNats: false })
const natsServer = pickNatsServer()
const password = 'test-password'
const nats = await startNats({ dir: join(dir, 'nats'), log, detach: true })
const pg = await startPostgres({
  dir: join(dir, 'pg'),
  password,
  database: 'app_tpl',
  log,
  unsafeFast: true,
  detach: true,
})
await migrate(pg.url, log)
const services: TestServices = {
  natsUrl: nats.url,
  natsPid: nats.pid,
  natsBin: natsServer?.bin ?? 'nats-server',
  natsVersion: natsServer?.version,
  pgBase: pg.url.replace(/\/app_tpl$/, ''),
  pgPid: pg.pid,
  template: 'app_tpl',
  dir,
}
writeFileSync(SERVICES_FILE, JSON.stringify(services, null, 2))
process.stdout.write(
  `# test services: nats-server v${natsServer?.version ?? '?'} at ${nats.url}, postgres pid ${String(pg.pid)}\n`,
)
