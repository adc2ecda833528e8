import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { findNatsServer } from '../../src/platform/local-services.ts'
import type { NatsTopology } from '../../src/platform/nats-topology.ts'
import { throwawayCa } from '../helpers/nats-topology.ts'

/*
 * `platform nats-config`: a plan in, the configs and credentials of a hub cluster and its leaves
 * out — valid for the nats-server at hand (`nats-server -t`), secrets 0600 in 0700 folders, no seed
 * in a config, and a second run keeps every seed and password.
 */
const root = join(import.meta.dirname, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'nats-config-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

// nats-server -t loads the certificates: real ones, from a throwaway CA
const plan = {
  prefix: 'acme',
  tls: throwawayCa(dir, ['127.0.0.1']),
  hub: [1, 2, 3].map((i) => ({
    host: '127.0.0.1',
    clientPort: 14220 + i,
    clusterPort: 16220 + i,
    leafPort: 17220 + i,
  })),
  regions: [
    { name: 'eu', host: '127.0.0.1', clientPort: 14300, hubLeafAddresses: ['127.0.0.1:17221', '127.0.0.1:17222'] },
    { name: 'us', host: '127.0.0.1', clientPort: 14301, hubLeafAddresses: ['127.0.0.1:17223'], events: true },
  ],
}
writeFileSync(join(dir, 'plan.json'), JSON.stringify(plan))

const cli = (args: string[]) =>
  spawnSync(process.execPath, ['src/command-line/bin.mjs', ...args], { cwd: root, encoding: 'utf8' })

t.test('writes the configs and credentials', async (t) => {
  const r = cli(['nats-config', join(dir, 'plan.json'), '--dir', join(dir, 'out'), '--output', 'json'])
  t.equal(r.status, 0, r.stderr)
  const topo = JSON.parse(r.stdout) as NatsTopology
  t.equal(topo.hub.length, 3)
  t.equal(topo.hubUrl, 'tls://127.0.0.1:14221,tls://127.0.0.1:14222,tls://127.0.0.1:14223')
  t.equal(statSync(join(dir, 'out')).mode & 0o777, 0o700)
  const secrets = [
    topo.platformSeedFile,
    topo.eventsSeedFile,
    ...topo.regions.flatMap((x) => [
      x.gatewaySeedFile,
      x.confFile,
      ...(x.eventsSeedFile === undefined ? [] : [x.eventsSeedFile]),
    ]),
    ...topo.hub.map((h) => h.confFile),
  ]
  for (const f of secrets) t.equal(statSync(f).mode & 0o777, 0o600, `${f} is 0600`)
  t.equal(topo.regions[0]?.eventsSeedFile, undefined, 'no events user in eu')
  t.match(readFileSync(topo.regions[0]?.gatewaySeedFile as string, 'utf8'), /# inbox_prefix: _INBOX_gateway_eu/)
  const hubConf = readFileSync(topo.hub[0]?.confFile as string, 'utf8')
  t.match(hubConf, /"acme\.rpc\.>"/, 'names follow the prefix')
  t.match(hubConf, /allowed_connection_types: \["LEAFNODE"\]/)
  t.match(hubConf, /domain: "hub"/)
  t.notMatch(hubConf, /"SU[A-Z0-9]+"/, 'no seed in a config')
  const eu = readFileSync(topo.regions[0]?.confFile as string, 'utf8')
  t.match(eu, /mappings: \{ "\$JS\.API\.>": "\$JS\.hub\.API\.>" \}/)
  t.notMatch(eu, /jetstream/, 'a leaf runs no JetStream')
  const server = findNatsServer()
  if (server === undefined) t.comment('no nats-server: configs not checked by the server')
  else
    for (const f of [...topo.hub.map((h) => h.confFile), ...topo.regions.map((x) => x.confFile)]) {
      const check = spawnSync(server, ['-c', f, '-t'], { encoding: 'utf8' })
      t.equal(check.status, 0, `${server} -t ${f}: ${check.stderr}${check.stdout}`)
    }
  const again = cli(['nats-config', join(dir, 'plan.json'), '--dir', join(dir, 'out'), '--output', 'json'])
  const second = JSON.parse(again.stdout) as NatsTopology
  t.same(second.regions[1]?.leafLink, topo.regions[1]?.leafLink, 'the leaf-link password is kept')
  t.equal(readFileSync(second.platformSeedFile, 'utf8'), readFileSync(topo.platformSeedFile, 'utf8'))
})

t.test('a plan without tls is written, with a warning; a bad plan is refused', async (t) => {
  const { tls: _tls, ...plain } = plan
  writeFileSync(join(dir, 'plain.json'), JSON.stringify(plain))
  const r = cli(['nats-config', join(dir, 'plain.json'), '--dir', join(dir, 'plain')])
  t.equal(r.status, 0)
  t.match(r.stderr, /no tls in the plan/)
  t.match(r.stdout, /edge gateways of eu: NATS_URL=nats:\/\/127\.0\.0\.1:14300/)
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...plan, regions: [{ name: 'e u' }] }))
  const bad = cli(['nats-config', join(dir, 'bad.json'), '--dir', join(dir, 'bad')])
  t.equal(bad.status, 1)
  t.match(bad.stderr, /does not match its shape/)
  t.equal(cli(['nats-config', join(dir, 'plan.json')]).status, 1, '--dir is required')
})
