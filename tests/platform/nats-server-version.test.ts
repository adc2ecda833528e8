import { connect } from '@nats-io/transport-node'
import t from 'tap'
import {
  compareNatsVersions,
  natsFeaturesOf,
  natsServerFeatures,
  natsVersionAtLeast,
  parseNatsVersion,
} from '../../src/platform/nats-capabilities.ts'
import {
  ensureCurrentNatsServer,
  natsServerVersion,
  PINNED_NATS_SERVER,
} from '../../src/platform/nats-server-binary.ts'
import { readServices } from '../setup/services.ts'

/*
 * The version comparison the feature checks rest on, and the server this pass of the suite runs
 * on: the pinned release in the main pass, the binary NATS_SERVER_BIN names in the compatibility
 * pass (tests/run.sh runs this file there too, so 2.9.10's answers are checked on 2.9.10 itself).
 */
t.test('versions compare by major, minor, patch', async (t) => {
  t.same(parseNatsVersion('2.15.3'), [2, 15, 3])
  t.same(parseNatsVersion('v2.9.10'), [2, 9, 10], 'a leading v')
  t.same(parseNatsVersion('2.11.0-RC.1'), [2, 11, 0], 'a pre-release')
  t.same(parseNatsVersion('2.10'), [2, 10, 0], 'no patch')
  t.equal(parseNatsVersion('nightly'), undefined)
  t.ok(compareNatsVersions('2.10.0', '2.9.10') > 0, '2.10 is newer than 2.9.10 (numbers, not text)')
  t.ok(compareNatsVersions('2.9.10', '2.9.9') > 0)
  t.ok(compareNatsVersions('2.15.3', '2.15.3') === 0)
  t.ok(compareNatsVersions('2.11.0-RC.1', '2.11.0') === 0, 'a pre-release counts as its release')
  t.ok(compareNatsVersions('1.99.99', '2.0.0') < 0)
  t.ok(compareNatsVersions('junk', '0.0.1') < 0, 'an unreadable version is older than any')
  t.ok(natsVersionAtLeast('3.0.0', '2.12.0'))
  t.notOk(natsVersionAtLeast('2.11.9', '2.12.0'))
})

t.test('features by version: 2.9 has none of the newer ones, 2.11 most, 2.12 all', async (t) => {
  const old = natsFeaturesOf('2.9.10')
  t.same(old, {
    version: '2.9.10',
    multiFilter: false,
    priorityGroups: false,
    perMessageTtl: false,
    consumerPause: false,
    kvPerKeyTtl: false,
    atomicBatch: false,
    messageSchedules: false,
  })
  const v211 = natsFeaturesOf('2.11.4')
  t.ok(v211.priorityGroups && v211.perMessageTtl && v211.consumerPause && v211.kvPerKeyTtl && v211.multiFilter)
  t.notOk(v211.atomicBatch, 'atomic batch publish came with 2.12')
  t.notOk(v211.messageSchedules)
  const v212 = natsFeaturesOf('2.12.0')
  t.ok(v212.atomicBatch && v212.messageSchedules)
  t.notOk(natsServerFeatures({ info: undefined }).perMessageTtl, 'no INFO yet: nothing is assumed')
})

t.test("the suite's server reports the version of the binary it was started from", async (t) => {
  const services = readServices()
  const nc = await connect({ servers: services.natsUrl, name: 'nats-server-version-test' })
  t.teardown(() => nc.close())
  const reported = nc.info?.version ?? ''
  t.equal(reported, natsServerVersion(services.natsBin), `INFO version is ${services.natsBin} --version`)
  const features = natsServerFeatures(nc)
  t.equal(features.version, reported)
  const explicit = process.env['NATS_SERVER_BIN'] ?? ''
  if (explicit !== '') {
    t.equal(services.natsBin, explicit, 'NATS_SERVER_BIN chose the server')
    t.equal(features.perMessageTtl, natsVersionAtLeast(reported, '2.11.0'))
    return
  }
  // The main pass runs on the pinned release; a machine where it cannot be built (no usable Go, a
  // failed build: the setup's fallback, which answers at once from its marker) runs on the installed one.
  if (compareNatsVersions(reported, PINNED_NATS_SERVER) < 0) {
    const r = ensureCurrentNatsServer()
    if (r.outcome === 'fallback') {
      t.comment(`no current nats-server on this machine (${r.reason}): the suite ran on ${reported}`)
      return
    }
  }
  t.equal(reported, PINNED_NATS_SERVER, `the pinned release v${PINNED_NATS_SERVER}`)
  for (const [feature, has] of Object.entries(features)) if (feature !== 'version') t.ok(has, `${feature} is there`)
})
