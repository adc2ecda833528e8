import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  eventsPermissions,
  gatewayPermissions,
  list,
  permissionsConf,
  userSeedFile,
  type Permissions,
} from './nats-credentials.ts'
import type { NatsNames } from './nats-names.ts'

/*
 * The nats-server configs and credentials of a deployment beyond one machine: a hub cluster of N
 * servers (JetStream, routes between them) where the internal roles run, and one leaf-node server
 * per region where that region's edge gateways connect. docs/multi-region.md draws it and
 * docs/nats-security.md says who may do what; `platform nats-config` writes it from the command line.
 *
 * One account, PLATFORM, on every server. On the hub: `platform` (the internal roles: every
 * subject), `events` (backend services reading execution events) and one leaf-link user per region,
 * `leaf-<region>`, which only a leaf-node connection may use and whose permissions are exactly what
 * an edge gateway (and, when the region has one, an events reader) needs: the leaf relays nothing
 * else into the hub, and receives nothing else from it. On each leaf: `gateway` (the region's edge
 * gateways; the only user there that may publish on `rpc.>`) and optionally `events`. A leaf runs
 * no JetStream: its clients' JetStream API requests cross the link to the hub's streams.
 *
 * NKey users (public keys in the configs, seeds in 0600 files, each with its own inbox prefix so
 * that no user reads another's replies); the leaf link authenticates with a generated password
 * (a leaf remote of nats-server 2.9 cannot sign with an NKey seed without an operator JWT), sent
 * only inside TLS. With `tls`, every connection — client, route, leaf — is TLS with certificates
 * verified both ways against the one CA.
 */

export interface HubServerPlan {
  /** The address the server listens on (clients, routes and leaf links). */
  host: string
  clientPort: number
  clusterPort: number
  leafPort: number
}

export interface RegionPlan {
  /** Letters, digits and `-`: names the leaf server, its users and their inbox prefixes. */
  name: string
  host: string
  clientPort: number
  /** Where the leaf dials the hub (`host:port` of hub leaf ports, or of something in between). */
  hubLeafAddresses: string[]
  /** A region-local `events` user (and the leaf link carries the EVENTS reads). */
  events?: boolean
  /** nats-server's monitoring port on `host` (/varz, /leafz), when wanted. */
  monitorPort?: number
}

export interface NatsTlsFiles {
  caFile: string
  certFile: string
  keyFile: string
}

export interface NatsTopologyPlan {
  /** Configs, seeds, passwords and the hub's JetStream stores go under it (0700). */
  dir: string
  names: NatsNames
  hub: HubServerPlan[]
  regions: RegionPlan[]
  /** One CA; the certificate (whose SANs name every server address) serves and authenticates every server. */
  tls?: NatsTlsFiles
  /** Cluster name of the hub (default `hub`). */
  clusterName?: string
  /** The hub's JetStream domain (default `hub`): where the leaves send their clients' JetStream API requests. */
  jetStreamDomain?: string
}

export interface HubServer {
  name: string
  confFile: string
  storeDir: string
  clientUrl: string
}

export interface RegionLayout {
  name: string
  confFile: string
  clientUrl: string
  /** NATS_NKEY_FILE of the region's edge gateways. */
  gatewaySeedFile: string
  /** NATS_NKEY_FILE of the region's events readers (when the region has one). */
  eventsSeedFile?: string
  /** The hub user the leaf link authenticates as. */
  leafLink: { user: string; password: string }
}

export interface NatsTopology {
  hub: HubServer[]
  /** NATS_URL of the internal roles (every hub server, comma-separated). */
  hubUrl: string
  /** NATS_NKEY_FILE of the internal roles. */
  platformSeedFile: string
  /** NATS_NKEY_FILE of a backend service reading events on the hub. */
  eventsSeedFile: string
  regions: RegionLayout[]
}

export const PLATFORM_ACCOUNT = 'PLATFORM'
export const leafLinkUser = (region: string): string => `leaf-${region}`
/** The inbox prefix of a region's user: its replies are its own, apart from every other region's. */
export const regionInboxPrefix = (user: 'gateway' | 'events', region: string): string => `_INBOX_${user}_${region}`

/**
 * What a region's leaf link may carry: the union of what its local users may do (an edge gateway,
 * and the events reader when it has one). Used on the hub, where a leaf-node connection's
 * permissions say what the leaf may send in (publish) and what the hub sends out to it (subscribe).
 */
export function leafLinkPermissions(names: NatsNames, region: RegionPlan, domain = 'hub'): Permissions {
  const g = gatewayPermissions(names, regionInboxPrefix('gateway', region.name))
  const e = region.events === true ? eventsPermissions(names, regionInboxPrefix('events', region.name)) : undefined
  const pub = g.publish === 'all' ? [] : g.publish
  const epub = e === undefined || e.publish === 'all' ? [] : e.publish
  return {
    publish: [
      ...new Set([...pub, ...epub].map((s) => inDomain(s, domain))),
      // The gateway answers the workers' `sse.listeners.<channel>` questions (is anyone still
      // reading this stream?). On a client connection allow_responses lets an answer out to the
      // asker's inbox and nowhere else; nats-server does not apply it to a leaf-node connection
      // (verified: the answer is dropped), so the link may publish to the platform's inboxes.
      // The leaf's own users are still held to allow_responses.
      '_INBOX.>',
    ],
    subscribe: [...new Set([...g.subscribe, ...(e?.subscribe ?? [])])],
    responses: true,
  }
}

/** The leaf maps its clients' `$JS.API.…` to the hub's domain, `$JS.<domain>.API.…`, before it crosses the link. */
const inDomain = (subject: string, domain: string): string =>
  subject.startsWith('$JS.API.') ? `$JS.${domain}.API.${subject.slice('$JS.API.'.length)}` : subject

/**
 * A leaf-local user's permissions: `p`, plus each JetStream API subject in the hub's domain (the
 * leaf's subject mapping rewrites a request before it checks the publisher's permissions).
 */
export function leafUserPermissions(p: Permissions, domain = 'hub'): Permissions {
  if (p.publish === 'all') return p
  return { ...p, publish: [...new Set([...p.publish, ...p.publish.map((s) => inDomain(s, domain))])] }
}

const q = JSON.stringify

function tlsBlock(tls: NatsTlsFiles | undefined, indent: string): string {
  if (tls === undefined) return ''
  return `${indent}tls { ca_file: ${q(tls.caFile)}, cert_file: ${q(tls.certFile)}, key_file: ${q(tls.keyFile)}, verify: true, timeout: 5 }\n`
}

function remoteTlsBlock(tls: NatsTlsFiles | undefined): string {
  if (tls === undefined) return ''
  return `, tls: { ca_file: ${q(tls.caFile)}, cert_file: ${q(tls.certFile)}, key_file: ${q(tls.keyFile)} }`
}

function readOrMakePassword(file: string): string {
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(24).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' })
  chmodSync(file, 0o600)
  return readFileSync(file, 'utf8').trim()
}

/*
 * A link that goes silent (packets dropped, no FIN or RST: a WAN partition) is noticed only by
 * unanswered pings: every 5 s, dropped after 2 missed, so within about 15 s instead of the
 * server's default 2 minutes × 2. Until then a leaf keeps the hub's interest and its edge's
 * requests wait for the RPC timeout; after it, they get 503 at once.
 */
const PINGS = 'ping_interval: "5s"\nping_max: 2\n'

const REGION_NAME = /^[A-Za-z0-9-]+$/

/**
 * Writes the configs (one per hub server, one per region's leaf) and the credentials under
 * `plan.dir`; seeds and passwords already there are kept, so a second run changes nothing but the
 * configs. Start each hub server with `nats-server -c <confFile>`, then each leaf.
 */
export function writeNatsTopology(plan: NatsTopologyPlan): NatsTopology {
  if (plan.hub.length === 0) throw new Error('the hub needs at least one server')
  for (const r of plan.regions)
    if (!REGION_NAME.test(r.name)) throw new Error(`region name ${r.name}: letters, digits and - only`)
  mkdirSync(plan.dir, { recursive: true, mode: 0o700 })
  chmodSync(plan.dir, 0o700)
  const { names, tls } = plan
  const scheme = tls === undefined ? 'nats' : 'tls'
  const domain = plan.jetStreamDomain ?? 'hub'
  const platform = userSeedFile(join(plan.dir, 'platform.nk'), 'platform', '_INBOX')
  const events = userSeedFile(join(plan.dir, 'events.nk'), 'events', '_INBOX_events')

  const hubUsers = [
    `      { nkey: ${q(platform.publicKey)} }`,
    `      { nkey: ${q(events.publicKey)}${permissionsConf(eventsPermissions(names, '_INBOX_events'))} }`,
  ]
  const regions: RegionLayout[] = []
  const leafConfs: string[] = []
  for (const r of plan.regions) {
    const rdir = join(plan.dir, `region-${r.name}`)
    mkdirSync(rdir, { recursive: true, mode: 0o700 })
    const user = leafLinkUser(r.name)
    const password = readOrMakePassword(join(rdir, `${user}.password`))
    // a leaf link is usable only by a leaf node: the password is no way in for a client
    hubUsers.push(
      `      { user: ${q(user)}, password: ${q(password)}, allowed_connection_types: ["LEAFNODE"]${permissionsConf(leafLinkPermissions(names, r, domain))} }`,
    )
    const gateway = userSeedFile(join(rdir, 'gateway.nk'), `gateway (${r.name})`, regionInboxPrefix('gateway', r.name))
    const regionEvents =
      r.events === true
        ? userSeedFile(join(rdir, 'events.nk'), `events (${r.name})`, regionInboxPrefix('events', r.name))
        : undefined
    const leafUsers = [
      `      { nkey: ${q(gateway.publicKey)}${permissionsConf(leafUserPermissions(gatewayPermissions(names, regionInboxPrefix('gateway', r.name)), domain))} }`,
      ...(regionEvents === undefined
        ? []
        : [
            `      { nkey: ${q(regionEvents.publicKey)}${permissionsConf(leafUserPermissions(eventsPermissions(names, regionInboxPrefix('events', r.name)), domain))} }`,
          ]),
    ]
    const urls = r.hubLeafAddresses.map(
      (a) => `${scheme}://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${a}`,
    )
    const confFile = join(rdir, 'leaf.conf')
    const conf =
      `# leaf node of region ${r.name} (generated by src/platform/nats-topology.ts): no JetStream here;\n` +
      `# its clients' JetStream API requests cross the leaf link to the hub.\n` +
      `server_name: ${q(`leaf-${r.name}`)}\n` +
      `listen: ${q(`${r.host}:${String(r.clientPort)}`)}\n` +
      PINGS +
      (r.monitorPort === undefined ? '' : `http: ${q(`${r.host}:${String(r.monitorPort)}`)}\n`) +
      tlsBlock(tls, '') +
      // clients ask `$JS.API.…` as on the hub; the leaf maps it to the hub's domain, `$JS.<domain>.API.…`
      `accounts {\n  ${PLATFORM_ACCOUNT} {\n    mappings: { "$JS.API.>": ${q(`$JS.${domain}.API.>`)} }\n    users: [\n${leafUsers.join('\n')}\n    ]\n  }\n}\n` +
      `leafnodes {\n  remotes: [\n    { urls: ${list(urls)}, account: ${q(PLATFORM_ACCOUNT)}${remoteTlsBlock(tls)} }\n  ]\n}\n`
    writeFileSync(confFile, conf, { mode: 0o600 })
    leafConfs.push(confFile)
    regions.push({
      name: r.name,
      confFile,
      clientUrl: `${scheme}://${r.host}:${String(r.clientPort)}`,
      gatewaySeedFile: gateway.file,
      ...(regionEvents === undefined ? {} : { eventsSeedFile: regionEvents.file }),
      leafLink: { user, password },
    })
  }

  const clusterName = plan.clusterName ?? 'hub'
  const hub: HubServer[] = plan.hub.map((s, i) => {
    const name = `${clusterName}-${String(i + 1)}`
    const storeDir = join(plan.dir, name)
    mkdirSync(storeDir, { recursive: true, mode: 0o700 })
    const routes = plan.hub
      .filter((_, j) => j !== i)
      .map((o) => `${tls === undefined ? 'nats' : 'tls'}://${o.host}:${String(o.clusterPort)}`)
    const conf =
      `# hub server ${name} (generated by src/platform/nats-topology.ts)\n` +
      `server_name: ${q(name)}\n` +
      `listen: ${q(`${s.host}:${String(s.clientPort)}`)}\n` +
      PINGS +
      tlsBlock(tls, '') +
      `jetstream { store_dir: ${q(storeDir)}, domain: ${q(domain)} }\n` +
      `cluster {\n  name: ${q(clusterName)}\n  listen: ${q(`${s.host}:${String(s.clusterPort)}`)}\n  routes: ${list(routes)}\n${tlsBlock(tls, '  ')}}\n` +
      // No authorization block here: a leaf authenticates as a PLATFORM user (a leaf-link user).
      // no_advertise: a leaf dials the hub addresses its remote lists (a relay, a load balancer,
      // a NAT), never the listen addresses gossiped by the cluster.
      `leafnodes {\n  listen: ${q(`${s.host}:${String(s.leafPort)}`)}\n  no_advertise: true\n${tlsBlock(tls, '  ')}}\n` +
      `accounts {\n  ${PLATFORM_ACCOUNT} {\n    jetstream: enabled\n    users: [\n${hubUsers.join('\n')}\n    ]\n  }\n}\n`
    const confFile = join(plan.dir, `${name}.conf`)
    writeFileSync(confFile, conf, { mode: 0o600 })
    return { name, confFile, storeDir, clientUrl: `${scheme}://${s.host}:${String(s.clientPort)}` }
  })
  return {
    hub,
    hubUrl: hub.map((h) => h.clientUrl).join(','),
    platformSeedFile: platform.file,
    eventsSeedFile: events.file,
    regions,
  }
}
