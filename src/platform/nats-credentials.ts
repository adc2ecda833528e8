import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { nkeys } from '@nats-io/transport-node'
import type { NatsNames } from './nats-names.ts'

/*
 * The users of the single-node nats-server. Nothing connects anonymously: each user is an NKey
 * (an Ed25519 key pair; the client signs the server's nonce with its seed), so nats.conf holds
 * only public keys and no secret, and the seeds stay in one file per user (mode 0600, in the
 * 0700 directory DATA_DIR/nats), generated on the first start and reused on every later one.
 *
 *  - `platform`: the internal roles (resource service, workers, actor host) and a single-node
 *    process, which runs them all: every subject. Only it answers requests.
 *  - `gateway`: an edge gateway process (ROLES=gateway): the requests it forwards and the few
 *    JetStream reads and writes it makes itself (see gatewayPermissions). It is the only other
 *    user that may publish on `rpc.>`, so the caller header of a request was set by the gateway
 *    (NATS cannot filter headers: what protects them is that nobody else may publish there).
 *  - `events`: a backend service reading execution events, live or through a consumer on EVENTS.
 */
export const LOCAL_NATS_USERS = ['platform', 'gateway', 'events'] as const
export type LocalNatsUser = (typeof LOCAL_NATS_USERS)[number]

export interface LocalNatsCredentials {
  /** The seed file of each user (`<dir>/<user>.nk`), what NATS_NKEY_FILE names. */
  seedFile: Record<LocalNatsUser, string>
  seed: Record<LocalNatsUser, Uint8Array>
  publicKey: Record<LocalNatsUser, string>
}

/** The seeds under `dir`: read, or generated (0600) on the first start. The directory is made 0700. */
export function localNatsCredentials(dir: string): LocalNatsCredentials {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  chmodSync(dir, 0o700)
  const out = { seedFile: {}, seed: {}, publicKey: {} } as LocalNatsCredentials
  for (const user of LOCAL_NATS_USERS) {
    const file = join(dir, `${user}.nk`)
    if (!existsSync(file))
      writeFileSync(file, seedFileText(user, nkeys.createUser().getSeed()), { mode: 0o600, flag: 'wx' })
    chmodSync(file, 0o600)
    const seed = readSeedFile(file)
    // a file from before the inbox line was written gets it (the seed is kept)
    if (readFileSync(file, 'utf8') !== seedFileText(user, seed))
      writeFileSync(file, seedFileText(user, seed), { mode: 0o600 })
    out.seedFile[user] = file
    out.seed[user] = seed
    out.publicKey[user] = nkeys.fromSeed(seed).getPublicKey()
  }
  return out
}

/**
 * The reply subjects a user may subscribe to. The `gateway` and `events` users get their own: were
 * `_INBOX.>` open to them, they could read the replies to every other client's requests (the
 * platform's AUTH_CACHE reads, the API's answers). The platform user keeps nats.js's default.
 */
export const inboxPrefixOf = (user: LocalNatsUser): string => (user === 'platform' ? '_INBOX' : `_INBOX_${user}`)

const INBOX_LINE = '# inbox_prefix: '

function seedFileText(user: LocalNatsUser, seed: Uint8Array): string {
  return userSeedText(user, inboxPrefixOf(user), seed)
}

function userSeedText(user: string, inboxPrefix: string, seed: Uint8Array): string {
  return `# NATS user "${user}" of this platform (generated; keep it private). Its clients use the inbox prefix below.\n${INBOX_LINE}${inboxPrefix}\n${new TextDecoder().decode(seed)}\n`
}

/**
 * The seed file of a user of a cluster or leaf node (src/platform/nats-topology.ts): read, or
 * generated (0600) when missing, with its own inbox prefix line. Returns the seed and public key.
 */
export function userSeedFile(
  file: string,
  user: string,
  inboxPrefix: string,
): { file: string; seed: Uint8Array; publicKey: string } {
  if (!existsSync(file))
    writeFileSync(file, userSeedText(user, inboxPrefix, nkeys.createUser().getSeed()), { mode: 0o600, flag: 'wx' })
  chmodSync(file, 0o600)
  const seed = readSeedFile(file)
  if (readFileSync(file, 'utf8') !== userSeedText(user, inboxPrefix, seed))
    writeFileSync(file, userSeedText(user, inboxPrefix, seed), { mode: 0o600 })
  return { file, seed, publicKey: nkeys.fromSeed(seed).getPublicKey() }
}

/** The `# inbox_prefix:` line of a seed file written by the platform, if it has one. */
export function seedFileInboxPrefix(file: string): string | undefined {
  const line = readFileSync(file, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(INBOX_LINE))
  return line?.slice(INBOX_LINE.length).trim()
}

/** A seed file: the `SU…` line (the format `nsc`/`nk` write; blank lines and `#` comments skipped). */
export function readSeedFile(file: string): Uint8Array {
  const line = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '' && !l.startsWith('#'))
  if (line === undefined || !line.startsWith('SU'))
    throw new Error(`${file} holds no NATS user seed (a line starting with SU)`)
  return new TextEncoder().encode(line)
}

export interface Permissions {
  publish: string[] | 'all'
  subscribe: string[]
  /** May answer the requests it received (a reply to the requester's inbox). */
  responses?: boolean
}

/** The JetStream API calls of a client that reads a stream through its own ephemeral consumers. */
const consumerReads = (stream: string): string[] => [
  `$JS.API.STREAM.INFO.${stream}`,
  // a single get where the stream has no allow_direct (KV gets fall back to it)
  `$JS.API.STREAM.MSG.GET.${stream}`,
  `$JS.API.CONSUMER.CREATE.${stream}`,
  `$JS.API.CONSUMER.CREATE.${stream}.>`,
  `$JS.API.CONSUMER.INFO.${stream}.*`,
  `$JS.API.CONSUMER.DELETE.${stream}.*`,
  `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
  // flow control and idle heartbeats of push consumers are answered on these
  `$JS.FC.${stream}.>`,
]

/**
 * What an edge gateway does on NATS, and nothing more (grep gateway/ and src/roles/gateway.ts):
 * forwards requests on `rpc.>` and waits for the replies on its inbox; relays stream channels
 * (subscribes `sse.live.>`, replays from the SSE stream by direct get or an ordered consumer,
 * publishes `sse.gone.<channel>`, answers `sse.listeners.<channel>`); publishes request-log
 * batches on `analytics.requests`; reads the WORKERS heartbeats
 * for /health; keeps its copy of the WEBHOOKS bucket (a watch, single gets); streams files in and
 * out of the FILES object store. It may create those last two buckets (the first one to need them
 * creates them, service or gateway) but no other stream. Not AUTH_CACHE, not jobs, not actors.
 */
export function gatewayPermissions(names: NatsNames, inbox = inboxPrefixOf('gateway')): Permissions {
  const sse = names.stream('SSE')
  const workers = `KV_${names.bucket('WORKERS')}`
  const webhooks = `KV_${names.bucket('WEBHOOKS')}`
  const files = `OBJ_${names.bucket('FILES')}`
  return {
    publish: [
      names.subject('rpc.>'),
      names.subject('sse.gone.*'),
      // batches of request-log records (src/analytics/), when ANALYTICS_HOST is set
      names.subject('analytics.requests'),
      '$JS.API.INFO',
      ...consumerReads(sse),
      `$JS.API.DIRECT.GET.${sse}`,
      ...consumerReads(workers),
      `$JS.API.DIRECT.GET.${workers}.>`,
      ...consumerReads(webhooks),
      `$JS.API.STREAM.CREATE.${webhooks}`,
      `$JS.API.DIRECT.GET.${webhooks}.>`,
      ...consumerReads(files),
      `$JS.API.STREAM.CREATE.${files}`,
      `$JS.API.STREAM.PURGE.${files}`,
      `$JS.API.DIRECT.GET.${files}`,
      `$JS.API.DIRECT.GET.${files}.>`,
      `$O.${names.bucket('FILES')}.>`,
    ],
    subscribe: [`${inbox}.>`, names.subject('sse.live.>'), names.subject('sse.listeners.*')],
    responses: true,
  }
}

/** A backend service reading execution events: live on `events.>` or durably from the EVENTS stream. */
export function eventsPermissions(names: NatsNames, inbox = inboxPrefixOf('events')): Permissions {
  const events = names.stream('EVENTS')
  return {
    publish: [
      '$JS.API.INFO',
      ...consumerReads(events),
      `$JS.API.CONSUMER.DURABLE.CREATE.${events}.*`,
      `$JS.ACK.${events}.>`,
    ],
    subscribe: [`${inbox}.>`, names.subject('events.>')],
  }
}

export const list = (subjects: string[]): string => `[${subjects.map((s) => JSON.stringify(s)).join(', ')}]`

/** A user's `, permissions: {…}` in nats.conf syntax ('' for every subject). */
export function permissionsConf(p: Permissions): string {
  if (p.publish === 'all') return ''
  const responses = p.responses === true ? ', allow_responses: true' : ''
  return `, permissions: { publish: { allow: ${list(p.publish)} }, subscribe: { allow: ${list(p.subscribe)} }${responses} }`
}

/**
 * The `authorization` block of nats.conf: the three users by public key, no `no_auth_user`, so a
 * connection without a valid signature is refused ("Authorization Violation").
 */
export function authorizationConf(creds: LocalNatsCredentials, names: NatsNames): string {
  const perms: Record<LocalNatsUser, Permissions> = {
    platform: { publish: 'all', subscribe: [] },
    gateway: gatewayPermissions(names),
    events: eventsPermissions(names),
  }
  const users = LOCAL_NATS_USERS.map(
    (u) => `    { nkey: ${JSON.stringify(creds.publicKey[u])}${permissionsConf(perms[u])} }`,
  )
  return `authorization {\n  users: [\n${users.join('\n')}\n  ]\n}\n`
}
