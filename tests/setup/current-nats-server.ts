import type { Logger } from '../../src/kernel/log.ts'
import { compareNatsVersions } from '../../src/platform/nats-capabilities.ts'
import {
  ensureCurrentNatsServer,
  PINNED_NATS_SERVER,
  pickNatsServer,
  type EnsureResult,
} from '../../src/platform/nats-server-binary.ts'

/**
 * Makes the current nats-server available for a test run and says so in one line (`say`): which
 * server the run uses and why, a build (announced before it starts: it takes a minute), or the
 * reason the run falls back to the installed server. Never throws for a failed build.
 */
export function prepareCurrentNatsServer(log: Logger, say: (line: string) => void): EnsureResult {
  const before = pickNatsServer()
  const chosen = (process.env['NATS_SERVER_BIN'] ?? '') !== ''
  if (!chosen && compareNatsVersions(before?.version ?? '', PINNED_NATS_SERVER) < 0)
    say(
      `nats-server v${PINNED_NATS_SERVER} missing: building it with go install if Go is there (about a minute, once per machine)`,
    )
  const r = ensureCurrentNatsServer({ log })
  const pick = r.pick
  const what = pick === undefined ? 'none found' : `v${pick.version ?? '?'} at ${pick.bin} (${pick.why})`
  const how =
    r.outcome === 'built'
      ? `, built in ${String(r.seconds)} s`
      : r.outcome === 'fallback'
        ? `; the current release is not available: ${r.reason}`
        : ''
  say(`nats-server for the tests: ${what}${how}`)
  return r
}
