import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { nkeyAuthenticator } from '@nats-io/transport-node'
import type { Shared, Role } from '../feature/define.ts'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import { ensureServerPackages, startNats, startPostgres } from '../platform/local-services.ts'
import { natsNames } from '../platform/nats-names.ts'
import { closeNats, connectNats, natsAuthOf, probeNats, provisionNats, type NatsConnection } from '../platform/nats.ts'
import { authorizationConf, localNatsCredentials } from '../platform/nats-credentials.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { natsRtt, onScrape } from '../platform/metrics.ts'
import { scrapeSample } from '../platform/scrape-sample.ts'
import { superviseService } from '../platform/supervisor.ts'
import { setStreamReplicas } from '../platform/stream-replicas.ts'
import type { LocalJobs } from '../jobs/local-run.ts'
import { provisionJobLayout } from '../jobs/start.ts'
import { lateTeller, type LateTeller } from '../../actors/runtime/tell.ts'
import type { Lifecycle } from './lifecycle.ts'

export interface Infrastructure extends Shared {
  natsUrl: string
  databaseUrl: string | undefined
  /** The job workers of this process, set by the workers role (started before the actor host, which may start jobs in them). */
  localJobs?: LocalJobs
  /** The actor host of this process, for messages told in-process (bound by the actors role once it runs). */
  actorsHere: LateTeller
}

export function databaseUrlOf(config: Config): string | undefined {
  if (config.DATABASE_URL !== '') return config.DATABASE_URL
  if (config.DATABASE_HOST === '') return undefined
  const auth = `${encodeURIComponent(config.DATABASE_USER)}:${encodeURIComponent(config.DATABASE_PASSWORD)}`
  return `postgres://${auth}@${config.DATABASE_HOST}:${String(config.DATABASE_PORT)}/${encodeURIComponent(config.DATABASE_NAME)}`
}

/**
 * NATS and Postgres for the roles asked: the configured servers, or in single-node mode (NATS_URL /
 * DATABASE_URL unset) supervised child servers under DATA_DIR; then the NATS probe and layout.
 */
export async function startInfrastructure(
  config: Config,
  roles: ReadonlySet<Role>,
  life: Lifecycle,
  log: Logger,
): Promise<Infrastructure> {
  let natsUrl = config.NATS_URL
  let databaseUrl = roles.has('resources') || roles.has('workers') ? databaseUrlOf(config) : undefined
  const needLocalPg = roles.has('resources') && databaseUrl === undefined
  if (natsUrl === '' || needLocalPg) {
    ensureServerPackages(log, { dataDir: config.DATA_DIR, bin: config.NATS_SERVER_BIN, buildNats: natsUrl === '' })
    mkdirSync(config.DATA_DIR, { recursive: true })
  }
  const names = natsNames(config.NATS_PREFIX)
  let auth = natsAuthOf(config)
  if (natsUrl === '') {
    const natsLog = log.child({ mod: 'nats-server' })
    const dir = join(config.DATA_DIR, 'nats')
    // no anonymous client: the server knows the generated users only, and this process is `platform`
    const creds = localNatsCredentials(dir)
    const authorization = authorizationConf(creds, names)
    auth = { authenticator: nkeyAuthenticator(creds.seed.platform) }
    life.local.nats = await superviseService({
      name: 'nats-server',
      log: natsLog,
      start: (port) =>
        startNats({
          dir,
          binary: { dataDir: config.DATA_DIR, bin: config.NATS_SERVER_BIN },
          port: port ?? 4222,
          exactPort: port !== undefined,
          log: natsLog,
          authorization,
        }),
    })
    natsUrl = life.local.nats.url
  }
  if (needLocalPg) {
    const pgLog = log.child({ mod: 'postgres' })
    const dir = join(config.DATA_DIR, 'pg')
    life.local.postgres = await superviseService({
      name: 'postgres',
      log: pgLog,
      start: (port) =>
        startPostgres({
          dir,
          port: port ?? 5432,
          exactPort: port !== undefined,
          password: config.DATABASE_PASSWORD,
          database: config.DATABASE_NAME,
          log: pgLog,
        }),
    })
    // the platform's own connections go over the local server's Unix socket when it has one
    databaseUrl = life.local.postgres.socketUrl ?? life.local.postgres.url
  }
  const nc = await connectNats(natsUrl, `platform:${[...roles].join('+')}`, log.child({ mod: 'nats' }), auth)
  life.nats = nc
  // single-node mode runs one server: more than one replica is refused there
  setStreamReplicas(nc, life.local.nats === undefined ? config.NATS_STREAM_REPLICAS : 1)
  life.onStop(() => closeNats(nc))
  // the round trip to the server, measured when Prometheus asks (at most once a second)
  const rtt = scrapeSample(() => nc.rtt(), { maxAgeMs: 1_000, timeoutMs: 1_000 })
  life.onStop(
    onScrape(async () => {
      const ms = await rtt()
      if (ms !== undefined) natsRtt.set(ms / 1000)
    }),
  )
  // what the server has (priority groups, per-message TTL, ...): callers ask natsServerFeatures(nc)
  log.info({ nats: await probeNats(nc) }, 'nats-server version and features')
  if (roles.size === 1 && roles.has('gateway') && life.local.nats === undefined) {
    // An edge gateway does not provision: with the `gateway` credentials it may not create or
    // update the platform's streams. It waits for the internal roles to have done it.
    await awaitLayout(nc, names, log.child({ mod: 'nats' }))
  } else {
    await provisionNats(nc, names, log.child({ mod: 'nats' }), {
      rateLimitWindowSeconds: config.RATE_LIMIT_WINDOW_SECONDS,
      jobStateTtlMs: config.JOB_RESULT_TTL_HOURS * 3600_000,
    })
    await provisionJobLayout(nc, names, config, log.child({ mod: 'nats' }))
  }
  return { nc, js: jetstream(nc), names, config, log, natsUrl, databaseUrl, actorsHere: lateTeller() }
}

/** The streams a gateway reads and cannot create, polled until a resources or workers process has provisioned them. */
async function awaitLayout(nc: NatsConnection, names: NatsNames, log: Logger): Promise<void> {
  const jsm = await jetstreamManager(nc)
  const needed = [names.stream('SSE'), `KV_${names.bucket('WORKERS')}`]
  for (let waited = false; ; waited = true) {
    const missing: string[] = []
    for (const stream of needed) if ((await jsm.streams.info(stream).catch(() => null)) === null) missing.push(stream)
    if (missing.length === 0) return
    if (!waited) log.info({ missing }, 'waiting for a resources or workers process to provision the NATS layout')
    await new Promise((r) => setTimeout(r, 500))
  }
}
