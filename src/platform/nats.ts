import { readFileSync } from 'node:fs'
import {
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  type ConnectionOptions,
  type NatsConnection,
} from '@nats-io/transport-node'
import { jetstreamManager, RetentionPolicy, StorageType, type StreamConfig } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import { MIN_NATS_SERVER, natsFeaturesOf, natsVersionAtLeast, type NatsServerFeatures } from './nats-capabilities.ts'
import { readSeedFile, seedFileInboxPrefix } from './nats-credentials.ts'
import type { NatsNames } from './nats-names.ts'
import { applyRequestPatch } from './nats-request-patch.ts'
import { applyWriteBatching } from './nats-write-batching.ts'
import { streamReplicasOf } from './stream-replicas.ts'

export type { NatsConnection }

/**
 * Connects with reconnection forever: a NATS restart must not end the process.
 * maxReconnectAttempts -1 = never give up; a reconnect try every 250 ms (a local restart takes
 * about that); requests and publishes made meanwhile are buffered by the client, up to
 * reconnectBufSize, and flushed once it is back (the gateway fails its requests fast instead).
 */
export async function connectNats(
  url: string,
  name: string,
  log: Logger,
  auth: NatsAuth = {},
): Promise<NatsConnection> {
  // noAsyncTraces: nats.js otherwise builds two Error objects with stack traces per request (~25% of
  // the gateway's CPU on a forwarded route, measured in bench/).
  applyRequestPatch()
  applyWriteBatching()
  const nc = await connect({
    servers: url.split(','),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    pingInterval: 10_000,
    noAsyncTraces: true,
    ...auth,
  })
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'close')
        log.warn({ nats: s.type }, 'nats connection status')
      // a permission violation (credentials narrower than what this process does) is reported here
      else if (s.type === 'error') log.warn({ err: s.error }, 'nats error')
    }
  })()
  return nc
}

/** How a client proves who it is: user/password, token or an authenticator (NKey seed, .creds); and its TLS. */
export type NatsAuth = Pick<ConnectionOptions, 'user' | 'pass' | 'token' | 'authenticator' | 'inboxPrefix' | 'tls'>

/** The credentials the configuration names for a NATS_URL server (none: anonymous). */
export function natsAuthOf(
  config: Pick<
    Config,
    'NATS_USER' | 'NATS_PASSWORD' | 'NATS_TOKEN' | 'NATS_NKEY_FILE' | 'NATS_CREDS_FILE' | 'NATS_INBOX_PREFIX'
  > &
    Partial<Pick<Config, 'NATS_TLS_CA_FILE' | 'NATS_TLS_CERT_FILE' | 'NATS_TLS_KEY_FILE'>>,
): NatsAuth {
  return { ...natsCredentialsOf(config), ...natsTlsOf(config) }
}

/**
 * TLS to the server when a CA or a client certificate is configured: the server's certificate is
 * verified against NATS_TLS_CA_FILE (else the system's CAs) and the client certificate is
 * presented to servers that verify their clients (a multi-region hub or leaf: docs/nats-security.md).
 */
function natsTlsOf(
  config: Partial<Pick<Config, 'NATS_TLS_CA_FILE' | 'NATS_TLS_CERT_FILE' | 'NATS_TLS_KEY_FILE'>>,
): NatsAuth {
  const ca = config.NATS_TLS_CA_FILE ?? ''
  const cert = config.NATS_TLS_CERT_FILE ?? ''
  const key = config.NATS_TLS_KEY_FILE ?? ''
  if (ca === '' && cert === '') return {}
  return {
    tls: {
      ...(ca === '' ? {} : { caFile: ca }),
      ...(cert === '' ? {} : { certFile: cert, keyFile: key }),
    },
  }
}

function natsCredentialsOf(
  config: Pick<
    Config,
    'NATS_USER' | 'NATS_PASSWORD' | 'NATS_TOKEN' | 'NATS_NKEY_FILE' | 'NATS_CREDS_FILE' | 'NATS_INBOX_PREFIX'
  >,
): NatsAuth {
  // a seed file the platform generated names the inbox prefix its user may subscribe to
  const prefix =
    config.NATS_INBOX_PREFIX !== ''
      ? config.NATS_INBOX_PREFIX
      : config.NATS_NKEY_FILE !== ''
        ? seedFileInboxPrefix(config.NATS_NKEY_FILE)
        : undefined
  const inbox = prefix === undefined ? {} : { inboxPrefix: prefix }
  if (config.NATS_CREDS_FILE !== '')
    return { authenticator: credsAuthenticator(readFileSync(config.NATS_CREDS_FILE)), ...inbox }
  if (config.NATS_NKEY_FILE !== '')
    return { authenticator: nkeyAuthenticator(readSeedFile(config.NATS_NKEY_FILE)), ...inbox }
  if (config.NATS_TOKEN !== '') return { token: config.NATS_TOKEN, ...inbox }
  if (config.NATS_USER !== '') return { user: config.NATS_USER, pass: config.NATS_PASSWORD, ...inbox }
  return inbox
}

/**
 * Drains (subscriptions finish what they hold, then the connection closes) but never waits longer
 * than `timeoutMs`: with the server gone a drain waits for a reconnect that may never come, which
 * made Ctrl-C hang. Then closes without draining.
 */
export async function closeNats(nc: NatsConnection, timeoutMs = 2_000): Promise<void> {
  if (nc.isClosed()) return
  let timer: NodeJS.Timeout | undefined
  const drained = nc.isDraining() ? nc.closed().then(() => undefined) : nc.drain()
  const gaveUp = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs)
  })
  const r = await Promise.race([drained.catch(() => undefined), gaveUp])
  clearTimeout(timer)
  if (r === 'timeout' || !nc.isClosed()) await nc.close().catch(() => undefined)
}

/** Refuses servers below the minimum or without JetStream; reports which newer features are usable. */
export async function probeNats(nc: NatsConnection): Promise<NatsServerFeatures> {
  const version = nc.info?.version ?? '0.0.0'
  if (!natsVersionAtLeast(version, MIN_NATS_SERVER))
    throw new Error(`nats-server ${version} is too old: ${MIN_NATS_SERVER} or newer is required`)
  const jsm = await jetstreamManager(nc).catch((err: unknown) => {
    throw new Error(`JetStream is not enabled on the NATS server (start it with -js): ${String(err)}`)
  })
  await jsm.getAccountInfo()
  return natsFeaturesOf(version)
}

const HOUR = 3600 * 1e9 // stream max_age is in nanoseconds
const DEFAULT_DUPLICATE_WINDOW = 120 * 1e9

/**
 * The platform's JetStream layout, created or updated idempotently. After each add
 * the echoed configuration is compared with the request: a server that silently drops an option
 * (2.9 does for several) makes start-up fail loudly instead of misbehaving later.
 */
export async function provisionNats(
  nc: NatsConnection,
  names: NatsNames,
  log: Logger,
  options: { rateLimitWindowSeconds?: number; jobStateTtlMs?: number } = {},
): Promise<void> {
  const jsm = await jetstreamManager(nc)
  const replicas = streamReplicasOf(nc)
  const streams: (Partial<StreamConfig> & { name: string })[] = [
    {
      name: names.stream('JOBS'),
      subjects: [names.subject('jobs.>')],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      duplicate_window: 10 * 60 * 1e9,
      num_replicas: replicas,
    },
    {
      name: names.stream('DLQ'),
      subjects: [names.subject('dlq.>')],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: 30 * 24 * HOUR,
      num_replicas: replicas,
    },
    {
      name: names.stream('SSE'),
      subjects: [names.subject('sse.in.>')],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: HOUR,
      allow_direct: true,
      republish: { src: names.subject('sse.in.>'), dest: names.subject('sse.live.>') },
      num_replicas: replicas,
    },
  ]
  for (const config of streams) {
    const name = config.name
    const existing = await jsm.streams.info(name).catch(() => null)
    const info = existing === null ? await jsm.streams.add(config) : await jsm.streams.update(name, config)
    assertEchoed(name, config as Record<string, unknown>, info.config as unknown as Record<string, unknown>)
  }
  const kvm = new Kvm(nc)
  const buckets = [
    // Every write is republished to `evt.job.<id>`: the job's done channel. A job's
    // state lives as long as its result (JOB_RESULT_TTL_HOURS): GET /jobs/{id} answers both alike.
    {
      name: 'JOB_STATE',
      opts: {
        history: 1,
        ttl: options.jobStateTtlMs ?? 24 * 3600_000,
        republish: { src: `$KV.${names.bucket('JOB_STATE')}.>`, dest: names.subject('evt.job.>') },
      },
    },
    { name: 'WORKERS', opts: { history: 1, ttl: 30_000 } },
    { name: 'LEASES', opts: { history: 1, ttl: 15_000 } },
    // Login rate-limit counters (src/identity/rate-limit.ts): the bucket TTL is the window, as 2.9 has no per-key TTL.
    { name: 'RATE_LIMITS', opts: { history: 1, ttl: (options.rateLimitWindowSeconds ?? 900) * 1000 } },
    // Principal and API-key cache (src/auth/principal-cache.ts): entries are deleted on every change, the TTL only bounds staleness after a missed delete.
    { name: 'AUTH_CACHE', opts: { history: 1, ttl: 600_000 } },
  ]
  for (const b of buckets) {
    const kv = await kvm.create(names.bucket(b.name), { ...b.opts, replicas })
    let status = await kv.status()
    // kvm.create opens an existing bucket as it is; bring its TTL and republish up to date.
    const wantRepublish = 'republish' in b.opts ? b.opts.republish : undefined
    if (
      status.ttl !== b.opts.ttl ||
      status.streamInfo.config.num_replicas !== replicas ||
      JSON.stringify(status.streamInfo.config.republish) !== JSON.stringify(wantRepublish)
    ) {
      const cfg = status.streamInfo.config
      // duplicate_window may not exceed max_age, and the bucket was created with the server's
      // default (2 min, or max_age when shorter): change both in the one update, or a shorter TTL
      // (RATE_LIMIT_WINDOW_SECONDS below 120) is refused and the start fails.
      const maxAge = b.opts.ttl * 1e6
      await jsm.streams.update(cfg.name, {
        ...cfg,
        max_age: maxAge,
        duplicate_window: Math.min(maxAge, DEFAULT_DUPLICATE_WINDOW),
        num_replicas: replicas,
        ...(wantRepublish === undefined ? {} : { republish: wantRepublish }),
      })
      status = await (await kvm.open(names.bucket(b.name))).status()
    }
    if (status.ttl !== b.opts.ttl)
      throw new Error(
        `nats ignored the ttl of bucket ${b.name}: asked ${String(b.opts.ttl)} ms, got ${String(status.ttl)}`,
      )
  }
  log.info(
    { streams: streams.map((s) => s.name), buckets: buckets.map((b) => names.bucket(b.name)) },
    'nats layout provisioned',
  )
}

function assertEchoed(name: string, asked: Record<string, unknown>, echoed: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(asked)) {
    if (value === undefined) continue
    const got = echoed[key]
    if (JSON.stringify(got) !== JSON.stringify(value)) {
      throw new Error(
        `nats-server ignored ${key} of stream ${name}: asked ${JSON.stringify(value)}, got ${JSON.stringify(got)}`,
      )
    }
  }
}
