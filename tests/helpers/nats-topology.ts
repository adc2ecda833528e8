import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect, nkeyAuthenticator, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node'
import { freePort, findNatsServer, waitForPort } from '../../src/platform/local-services.ts'
import { readSeedFile, seedFileInboxPrefix } from '../../src/platform/nats-credentials.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import {
  writeNatsTopology,
  type HubServerPlan,
  type NatsTlsFiles,
  type NatsTopology,
  type RegionLayout,
} from '../../src/platform/nats-topology.ts'
import { startDelayRelay, type DelayRelay } from './delay-relay.ts'

/*
 * The multi-region layout of docs/multi-region.md on one machine, for tests/regions/: a hub
 * cluster of nats-servers (JetStream, routes) on 127.0.0.1 and, per region, a network namespace
 * (a veth pair to the host) holding the region's leaf node. The leaf reaches the hub only through
 * a delay relay per hub server (tests/helpers/delay-relay.ts: netem is missing from this kernel),
 * listening on the host end of the region's veth; cutting a region = cutting its relays. TLS
 * everywhere, from a throwaway CA made with openssl. Needs root (ip netns).
 */
interface Teardown {
  teardown(fn: () => unknown): void
}

const root = join(import.meta.dirname, '..', '..')

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`)
}

/** Why this machine cannot run the topology (not root, no `ip`, no openssl), or undefined. */
export function regionsUnsupported(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root'
  if (spawnSync('ip', ['netns', 'list']).status !== 0) return '`ip netns` is not available'
  if (spawnSync('openssl', ['version']).status !== 0) return 'openssl is not installed'
  if (findNatsServer() === undefined) return 'no nats-server'
  return undefined
}

/** A throwaway CA and one certificate (server and client use) naming every address in `ips`. */
export function throwawayCa(dir: string, ips: string[]): NatsTlsFiles {
  const f = (n: string) => join(dir, n)
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=regions-test-ca',
  ])
  run('openssl', ['req', ...ec, '-keyout', f('nats.key'), '-out', f('nats.csr'), '-subj', '/CN=nats'])
  const san = ['DNS:localhost', ...ips.map((ip) => `IP:${ip}`)].join(',')
  writeFileSync(f('ext.cnf'), `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`)
  run('openssl', [
    'x509',
    '-req',
    '-in',
    f('nats.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('nats.pem'),
    '-days',
    '2',
    '-extfile',
    f('ext.cnf'),
  ])
  return { caFile: f('ca.pem'), certFile: f('nats.pem'), keyFile: f('nats.key') }
}

function exited(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => proc.once('exit', () => resolve()))
}

/** A nats-server of the topology: kill -9 it and start it again on the same config and store. */
export interface ServerProc {
  name: string
  proc(): ChildProcess
  kill9(): Promise<void>
  start(): Promise<void>
  stop(): Promise<void>
}

function natsServer(o: {
  name: string
  conf: string
  log: string
  host: string
  port: number
  netns?: string
}): ServerProc {
  const bin = findNatsServer() as string
  let proc: ChildProcess | undefined
  const start = async () => {
    const args = ['-c', o.conf, '-l', o.log]
    proc =
      o.netns === undefined
        ? spawn(bin, args, { stdio: 'ignore' })
        : spawn('ip', ['netns', 'exec', o.netns, bin, ...args], { stdio: 'ignore' })
    await waitForPort(o.port, proc, o.name, 30_000, o.host)
  }
  const signal = async (s: NodeJS.Signals) => {
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return
    const p = proc
    p.kill(s)
    await exited(p)
  }
  return {
    name: o.name,
    proc: () => proc as ChildProcess,
    kill9: () => signal('SIGKILL'),
    start,
    stop: () => signal('SIGTERM'),
  }
}

export interface Region {
  name: string
  netns: string
  /** The host end of the veth (the relays listen there) and the namespace end (leaf, edge gateway). */
  hostIp: string
  nsIp: string
  layout: RegionLayout
  leaf: ServerProc
  relays: DelayRelay[]
  monitorUrl: string
  /** Leaf connections the leaf has now (its /leafz). */
  leafLinks(): Promise<number>
  cut(): Promise<void>
  /** The link goes silent (no FIN, no RST): only pings tell. */
  stall(): void
  restore(): Promise<void>
}

export interface RegionsTopology {
  dir: string
  tls: NatsTlsFiles
  topology: NatsTopology
  hub: ServerProc[]
  regions: Region[]
  delayMs: number
  /** A client of the hub as `platform` (or another seed file), with TLS. */
  hubClient(seedFile?: string, extra?: Partial<ConnectionOptions>): Promise<NatsConnection>
  /** A client of a region's leaf with a seed file of that region. */
  leafClient(region: Region, seedFile: string, extra?: Partial<ConnectionOptions>): Promise<NatsConnection>
  /** A child process in a region's namespace (an edge gateway). */
  spawnIn(region: Region, command: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess
}

let counter = 0

export async function startRegionsTopology(
  t: Teardown,
  o: { regions: string[]; hubSize?: number; delayMs?: number; regionEvents?: boolean },
): Promise<RegionsTopology> {
  const dir = mkdtempSync(join(tmpdir(), 'regions-'))
  const tag = `${String(process.pid % 100_000)}${String(++counter)}`
  const delayMs = o.delayMs ?? 40
  const octet = 200 + (process.pid % 50)
  const regionNet = o.regions.map((name, i) => ({
    name,
    netns: `rg${tag}-${name}`,
    vethHost: `rg${tag}${String(i)}h`,
    vethNs: `rg${tag}${String(i)}n`,
    hostIp: `10.${String(octet)}.${String(i + (counter % 8) * 8)}.1`,
    nsIp: `10.${String(octet)}.${String(i + (counter % 8) * 8)}.2`,
  }))
  const cleanups: (() => unknown)[] = []
  t.teardown(async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined)
    rmSync(dir, { recursive: true, force: true })
  })
  for (const r of regionNet) {
    run('ip', ['netns', 'add', r.netns])
    cleanups.push(() => spawnSync('ip', ['netns', 'del', r.netns]))
    run('ip', ['link', 'add', r.vethHost, 'type', 'veth', 'peer', 'name', r.vethNs])
    cleanups.push(() => spawnSync('ip', ['link', 'del', r.vethHost]))
    run('ip', ['link', 'set', r.vethNs, 'netns', r.netns])
    run('ip', ['addr', 'add', `${r.hostIp}/30`, 'dev', r.vethHost])
    run('ip', ['link', 'set', r.vethHost, 'up'])
    run('ip', ['netns', 'exec', r.netns, 'ip', 'addr', 'add', `${r.nsIp}/30`, 'dev', r.vethNs])
    run('ip', ['netns', 'exec', r.netns, 'ip', 'link', 'set', r.vethNs, 'up'])
    run('ip', ['netns', 'exec', r.netns, 'ip', 'link', 'set', 'lo', 'up'])
  }
  const tls = throwawayCa(dir, ['127.0.0.1', ...regionNet.flatMap((r) => [r.hostIp, r.nsIp])])

  const hubPlan: HubServerPlan[] = []
  for (let i = 0; i < (o.hubSize ?? 3); i++)
    hubPlan.push({
      host: '127.0.0.1',
      clientPort: await freePort(),
      clusterPort: await freePort(),
      leafPort: await freePort(),
    })
  // one relay per region and hub server, on the region's host address, to that server's leaf port
  const relaysOf = new Map<string, DelayRelay[]>()
  for (const r of regionNet) {
    const relays = await Promise.all(
      hubPlan.map((h) => startDelayRelay({ host: r.hostIp, target: { host: h.host, port: h.leafPort }, delayMs })),
    )
    cleanups.push(() => Promise.all(relays.map((x) => x.close())))
    relaysOf.set(r.name, relays)
  }
  const topology = writeNatsTopology({
    dir: join(dir, 'nats'),
    names: natsNames(''),
    tls,
    hub: hubPlan,
    regions: regionNet.map((r) => ({
      name: r.name,
      host: r.nsIp,
      clientPort: 4222,
      monitorPort: 8222,
      events: o.regionEvents ?? true,
      hubLeafAddresses: (relaysOf.get(r.name) ?? []).map((x) => `${r.hostIp}:${String(x.port)}`),
    })),
  })
  const hub = topology.hub.map((h, i) =>
    natsServer({
      name: h.name,
      conf: h.confFile,
      log: join(dir, `${h.name}.log`),
      host: '127.0.0.1',
      port: hubPlan[i]?.clientPort as number,
    }),
  )
  cleanups.push(() => Promise.all(hub.map((s) => s.stop())))
  await Promise.all(hub.map((s) => s.start()))

  const tlsClient = { caFile: tls.caFile, certFile: tls.certFile, keyFile: tls.keyFile }
  const clientOf = (servers: string, seedFile: string, extra: Partial<ConnectionOptions> = {}) =>
    connect({
      servers: servers.split(','),
      authenticator: nkeyAuthenticator(readSeedFile(seedFile)),
      inboxPrefix: seedFileInboxPrefix(seedFile) ?? '_INBOX',
      tls: tlsClient,
      ...extra,
    })
  // JetStream answers once the cluster has elected its meta leader
  const probe = await clientOf(topology.hubUrl, topology.platformSeedFile)
  const deadline = Date.now() + 30_000
  for (;;) {
    const ok = await jetstreamManager(probe)
      .then((jsm) => jsm.getAccountInfo())
      .then(
        () => true,
        () => false,
      )
    if (ok) break
    if (Date.now() > deadline) throw new Error('the hub cluster did not offer JetStream within 30 s')
    await new Promise((r) => setTimeout(r, 200))
  }
  await probe.close()

  const regions: Region[] = []
  for (const r of regionNet) {
    const layout = topology.regions.find((x) => x.name === r.name) as RegionLayout
    const leaf = natsServer({
      name: `leaf-${r.name}`,
      conf: layout.confFile,
      log: join(dir, `leaf-${r.name}.log`),
      host: r.nsIp,
      port: 4222,
      netns: r.netns,
    })
    cleanups.push(() => leaf.stop())
    await leaf.start()
    const relays = relaysOf.get(r.name) ?? []
    const monitorUrl = `http://${r.nsIp}:8222`
    const leafLinks = async () => {
      const res = await fetch(`${monitorUrl}/leafz`)
      return ((await res.json()) as { leafs?: unknown[] }).leafs?.length ?? 0
    }
    regions.push({
      name: r.name,
      netns: r.netns,
      hostIp: r.hostIp,
      nsIp: r.nsIp,
      layout,
      leaf,
      relays,
      monitorUrl,
      leafLinks,
      cut: async () => {
        await Promise.all(relays.map((x) => x.cut()))
      },
      stall: () => {
        for (const x of relays) x.stall()
      },
      restore: async () => {
        await Promise.all(relays.map((x) => x.restore()))
      },
    })
  }
  // every leaf linked before anyone uses it
  for (const r of regions) {
    const until = Date.now() + 30_000
    while ((await r.leafLinks().catch(() => 0)) === 0) {
      if (Date.now() > until) throw new Error(`leaf ${r.name} did not link to the hub`)
      await new Promise((res) => setTimeout(res, 100))
    }
  }
  return {
    dir,
    tls,
    topology,
    hub,
    regions,
    delayMs,
    hubClient: (seedFile = topology.platformSeedFile, extra = {}) => clientOf(topology.hubUrl, seedFile, extra),
    leafClient: (region, seedFile, extra = {}) => clientOf(region.layout.clientUrl, seedFile, extra),
    spawnIn: (region, command, args, env) =>
      spawn('ip', ['netns', 'exec', region.netns, command, ...args], {
        cwd: root,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
  }
}
