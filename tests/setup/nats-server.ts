import { createLogger } from '../../src/kernel/log.ts'
import { prepareCurrentNatsServer } from './current-nats-server.ts'

/*
 * Run by tests/run.sh before the suite: makes the current nats-server available (a `go install`
 * of the pinned release into the machine cache, once per machine) and says which server the suite
 * will run on, on stderr. Prints the chosen binary's path alone on stdout (run.sh compares its
 * version with Debian's to decide the compatibility pass). A failed build is no failure: the suite
 * runs on the installed server and the line says why.
 */
const log = createLogger({ level: 'silent', svc: 'test-setup' })
const r = prepareCurrentNatsServer(log, (line) => process.stderr.write(`${line}\n`))
process.stdout.write(`${r.pick?.bin ?? ''}\n`)
