import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { findNatsServer } from '../../src/platform/local-services.ts'
import {
  ensureCurrentNatsServer,
  findGo,
  natsServerCacheDir,
  natsServerVersion,
  PINNED_NATS_SERVER,
  pickNatsServer,
} from '../../src/platform/nats-server-binary.ts'
import { readServices } from '../setup/services.ts'

/*
 * Which nats-server binary is picked, on this machine's real binaries: NATS_SERVER_BIN first, a
 * current one in the data directory's bin/ or the machine cache, and a build that cannot happen
 * falling back to the installed server with its reason instead of failing. The environment
 * (PATH, XDG_CACHE_HOME, NATS_SERVER_BIN) is changed per test and put back.
 */
const DEBIAN = '/usr/sbin/nats-server'

function withEnv(t: Test, vars: Record<string, string | undefined>): void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]))
  const apply = (v: Record<string, string | undefined>) => {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) delete process.env[k]
      else process.env[k] = val
    }
  }
  apply(vars)
  t.teardown(() => apply(saved))
}

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'nats-pick-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

// A current binary to place around: the suite's own when it is current (it is in the main pass).
const suiteBin = readServices().natsBin
const notCurrent =
  natsServerVersion(suiteBin) === PINNED_NATS_SERVER
    ? false
    : `the suite runs on ${suiteBin}, not v${PINNED_NATS_SERVER}`

t.test('NATS_SERVER_BIN wins over everything, and findNatsServer answers the same', async (t) => {
  withEnv(t, { NATS_SERVER_BIN: '/opt/some/nats-server' })
  const pick = pickNatsServer()
  t.equal(pick?.bin, '/opt/some/nats-server')
  t.equal(pick?.why, 'NATS_SERVER_BIN')
  t.equal(findNatsServer(), '/opt/some/nats-server', 'the name and call the benches use')
  t.equal(pickNatsServer({ bin: '/from/config' })?.bin, '/from/config', 'the configured value before the environment')
  t.equal(ensureCurrentNatsServer().outcome, 'present', 'nothing is built when the caller chose')
})

t.test(
  "a current server in the data directory's bin/ is picked over an older one on PATH",
  { skip: notCurrent },
  async (t) => {
    const cache = tempDir(t)
    const dataDir = tempDir(t)
    mkdirSync(join(dataDir, 'bin'))
    symlinkSync(suiteBin, join(dataDir, 'bin', 'nats-server'))
    withEnv(t, { NATS_SERVER_BIN: undefined, XDG_CACHE_HOME: cache, PATH: '/usr/sbin:/usr/bin:/bin' })
    t.equal(natsServerCacheDir(), join(cache, 'agent-platform', 'bin'), 'the cache follows XDG_CACHE_HOME')
    const pick = pickNatsServer({ dataDir })
    t.equal(pick?.bin, join(dataDir, 'bin', 'nats-server'))
    t.equal(pick?.version, PINNED_NATS_SERVER)
    t.match(pick?.why ?? '', /data directory/)
    t.equal(ensureCurrentNatsServer({ dataDir }).outcome, 'present', 'nothing to build')
  },
)

t.test('a current server in the machine cache is picked', { skip: notCurrent }, async (t) => {
  const cache = tempDir(t)
  mkdirSync(join(cache, 'agent-platform', 'bin'), { recursive: true })
  symlinkSync(suiteBin, join(cache, 'agent-platform', 'bin', 'nats-server'))
  withEnv(t, { NATS_SERVER_BIN: undefined, XDG_CACHE_HOME: cache, PATH: '/usr/sbin:/usr/bin:/bin' })
  const pick = pickNatsServer()
  t.equal(pick?.bin, join(cache, 'agent-platform', 'bin', 'nats-server'))
  t.match(pick?.why ?? '', /machine cache/)
})

t.test('a build that failed earlier falls back to the installed server with the reason', async (t) => {
  const cache = tempDir(t)
  const dir = join(cache, 'agent-platform', 'bin')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, `nats-server-v${PINNED_NATS_SERVER}.failed`), 'go install exited 1: no network\n')
  withEnv(t, { NATS_SERVER_BIN: undefined, XDG_CACHE_HOME: cache, PATH: '/nonexistent' })
  const r = ensureCurrentNatsServer()
  t.equal(r.outcome, 'fallback')
  if (r.outcome !== 'fallback') return
  t.match(r.reason, /an earlier build failed .*no network/)
  t.equal(r.pick?.bin, natsServerVersion(DEBIAN) === undefined ? undefined : DEBIAN, "Debian's server, when installed")
  if (r.pick !== undefined) t.match(r.pick.why, new RegExp(`no nats-server v${PINNED_NATS_SERVER} or newer`))
})

t.test('a build that fails (no module source reachable) falls back, says why and is not retried', async (t) => {
  const go = findGo()
  if ('reason' in go) return t.pass(`no build to fail here: ${go.reason}`)
  const cache = tempDir(t)
  // An empty module cache and no proxy: `go install` fails at once, as it would offline.
  withEnv(t, {
    NATS_SERVER_BIN: undefined,
    XDG_CACHE_HOME: cache,
    PATH: '/usr/bin:/bin',
    GOMODCACHE: join(cache, 'gomod'),
    GOPROXY: 'off',
  })
  const r = ensureCurrentNatsServer()
  t.equal(r.outcome, 'fallback')
  if (r.outcome !== 'fallback') return
  t.match(r.reason, /building nats-server v[\d.]+ failed: go install exited 1/)
  t.match(r.reason, /GOPROXY=off/, "go's own words are in the reason")
  const again = ensureCurrentNatsServer()
  t.match(
    again.outcome === 'fallback' ? again.reason : '',
    /an earlier build failed/,
    'the next start does not build again',
  )
})
