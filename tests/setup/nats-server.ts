import { createLogger } from '../../src/kernel/log.ts'
import { ensureCurrentNatsServer } from '../../src/platform/nats-server-binary.ts'

/*
 * Run by tests/run.sh before the suite: makes the current nats-server available (a `go install`
 * of the pinned release into the machine cache, once per machine) and says which server the suite
 * will run on. Prints the chosen binary's path alone on stdout (run.sh compares it with Debian's
 * to decide the compatibility pass) and the human line on stderr. A failed build is no failure:
 * the suite runs on the installed server and the line says why.
 */
const log = createLogger({ level: 'warn', svc: 'test-setup' })
const r = ensureCurrentNatsServer({ log })
const pick = r.pick
const what = pick === undefined ? 'none found' : `v${pick.version ?? '?'} at ${pick.bin} (${pick.why})`
const how =
  r.outcome === 'built'
    ? `, built in ${String(r.seconds)} s`
    : r.outcome === 'fallback'
      ? `; current release not available: ${r.reason}`
      : ''
process.stderr.write(`nats-server for the suite: ${what}${how}\n`)
process.stdout.write(`${pick?.bin ?? ''}\n`)
