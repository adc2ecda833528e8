import type { Static } from '@sinclair/typebox'
import type { DatabaseConnectionSpec } from '../../schemas/database-connection.ts'
import type { Config } from '../kernel/config.ts'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { databaseConnectionKind } from '../kinds/database-connection/kind.ts'
import type { Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { extraCa } from '../platform/outbound-http.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import { clickhousePool } from './drivers/clickhouse.ts'
import { postgresPool } from './drivers/postgres.ts'
import { snowflakePool } from './drivers/snowflake.ts'
import { assertNotPlatformDatabase, type PlatformDatabase } from './platform-database.ts'
import { DEFAULT_PORTS, type ConnectionSettings, type DataPool } from './drivers/types.ts'

/*
 * Pools of external database connections: at most one per connection and process, built on first
 * use and replaced when the connection changes. Other features use it through
 * `connectionPools(deps).getPool(id)` / `.withConnection(id, fn)` (database triggers and
 * components build on it).
 *
 * Freshness, two ways:
 *  - every change of a connection (update, delete, config apply) is announced on the core NATS
 *    subject `<prefix>.data.connection.invalidate` (module.ts publishes it from the resource
 *    service's change listener); every process holding pools subscribes and closes the pool of
 *    that connection at once;
 *  - `getPool` reads the connection's row (one primary-key lookup) and compares its `updated_at`
 *    with the pool's, so an announcement lost while a process was disconnected from NATS cannot
 *    leave an old pool (old password, old host) in use.
 * A replaced pool finishes the statements already running on it, then closes.
 */
type Spec = Static<typeof DatabaseConnectionSpec>
/** A connection as the resource engine returns it. */
export type ConnectionRecord = ResourceRecord<Spec>

export const INVALIDATE_SUBJECT = 'data.connection.invalidate'

export interface PoolsDeps {
  db: Db
  resources: Pick<ResourceService, 'byId' | 'secretsOf'>
  config: Config
  log: Logger
  /**
   * The platform's own database, which no pool may lead to without allow_platform_database: the
   * data feature's parts pass it (module.ts); a registry another feature opened first gets it
   * then, before any pool is built. Without it (a process the data feature does not run in) the
   * comparison is skipped.
   */
  platformDatabase?: PlatformDatabase | undefined
}

export interface ConnectionPools {
  readonly log: Logger
  /** The pool of a saved connection (422 database.connection_not_found when it does not exist, 409 when inactive). */
  getPool(connectionId: string): Promise<DataPool>
  /**
   * Runs `fn` with the connection's pool; a pool replaced meanwhile closes only after `fn` ends.
   * `record`: the connection as the caller just read it (saves reading it again).
   */
  withConnection<T>(connectionId: string, fn: (pool: DataPool) => Promise<T>, record?: ConnectionRecord): Promise<T>
  /** Drops (and closes once idle) the pool of a connection in this process. */
  invalidate(connectionId: string): void
  /** How many pools this process holds (tests, health). */
  size(): number
  closeAll(): Promise<void>
}

/** A connection's settings with the defaults of the platform applied. */
export function settingsOf(spec: Spec, password: string | null, config: Config): ConnectionSettings {
  const maxPool = spec.config.max_pool_size ?? config.DATABASE_POOL_MAX_SIZE
  const minPool = Math.min(spec.config.min_pool_size ?? config.DATABASE_POOL_MIN_SIZE, maxPool)
  const tls = spec.ssl_mode !== null && spec.ssl_mode !== 'disable'
  const port = spec.port ?? (spec.connection_type === 'clickhouse' && tls ? 8443 : DEFAULT_PORTS[spec.connection_type])
  return {
    type: spec.connection_type,
    host: spec.host,
    port,
    database: spec.database,
    username: spec.username,
    password,
    sslMode: spec.ssl_mode,
    config: spec.config,
    minPool,
    maxPool,
  }
}

/** A driver's pool for settings (also for `POST …/test` with raw parameters, closed right after). */
export function openPool(s: ConnectionSettings, config: Config, log: Logger): DataPool {
  const timing = {
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
    idleMs: config.DATABASE_POOL_IDLE_SECONDS * 1000,
  }
  if (s.type === 'postgresql') return postgresPool(s, timing, log)
  if (s.type === 'clickhouse') return clickhousePool(s, timing)
  const ca = extraCa(config.OUTBOUND_EXTRA_CA_FILE)
  return snowflakePool(s, ca === undefined ? {} : { ca })
}

interface Entry {
  pool: DataPool
  version: string
  inflight: number
  retired: boolean
}

/** The platform's own database of a registry, as the deps that named it said (see PoolsDeps). */
interface PlatformHolder {
  database: PlatformDatabase | undefined
}

const registries = new WeakMap<Db, { pools: ConnectionPools; platform: PlatformHolder }>()

/** The pools of this process for one platform database (one registry per `db`, created on first use). */
export function connectionPools(d: PoolsDeps): ConnectionPools {
  let found = registries.get(d.db)
  if (found === undefined) {
    const platform = { database: d.platformDatabase }
    found = { pools: createRegistry(d, platform), platform }
    registries.set(d.db, found)
  } else if (d.platformDatabase !== undefined) found.platform.database = d.platformDatabase
  return found.pools
}

function createRegistry(d: PoolsDeps, platform: PlatformHolder): ConnectionPools {
  const entries = new Map<string, Entry>()
  const building = new Map<string, Promise<Entry>>()
  const log = d.log.child({ mod: 'data-pools' })

  const retire = (e: Entry) => {
    e.retired = true
    if (e.inflight === 0)
      e.pool.close().catch((err: unknown) => log.warn({ err: String(err) }, 'closing a database pool failed'))
  }

  const build = async (id: string, version: string, spec: Spec): Promise<Entry> => {
    const secrets = await d.resources.secretsOf(databaseConnectionKind, id)
    const settings = settingsOf(spec, secrets['password'] ?? null, d.config)
    // the host resolved (502 upstream.dns_failed otherwise) and not the platform's own database
    await assertNotPlatformDatabase(settings, platform.database, spec.allow_platform_database === true)
    const pool = openPool(settings, d.config, log)
    log.info({ connection: id, type: spec.connection_type }, 'database pool opened')
    return { pool, version, inflight: 0, retired: false }
  }

  const acquire = async (id: string, known?: ConnectionRecord): Promise<Entry> => {
    const record = known ?? (await d.resources.byId(databaseConnectionKind, id))
    if (record === null) {
      const had = entries.get(id)
      if (had !== undefined) {
        entries.delete(id)
        retire(had)
      }
      throw AppError.of('database.connection_not_found', `database connection ${id} does not exist`)
    }
    if (record.is_active === false)
      throw AppError.of('database.connection_inactive', `database connection ${record.name} is not active`)
    const version = String(record['updated_at'])
    const current = entries.get(id)
    if (current !== undefined && current.version === version) return current
    const key = `${id}@${version}`
    let pending = building.get(key)
    if (pending === undefined) {
      pending = build(id, version, record).finally(() => building.delete(key))
      building.set(key, pending)
    }
    const made = await pending
    const before = entries.get(id)
    if (before !== made) {
      if (before !== undefined) retire(before)
      entries.set(id, made)
    }
    return made
  }

  return {
    log,
    async getPool(id) {
      return (await acquire(id)).pool
    },
    async withConnection(id, fn, record) {
      const e = await acquire(id, record)
      e.inflight++
      try {
        return await fn(e.pool)
      } finally {
        e.inflight--
        if (e.retired && e.inflight === 0) retire(e)
      }
    },
    invalidate(id) {
      const e = entries.get(id)
      if (e === undefined) return
      entries.delete(id)
      retire(e)
      log.info({ connection: id }, 'database pool invalidated')
    },
    size: () => entries.size,
    async closeAll() {
      const all = [...entries.values()]
      entries.clear()
      await Promise.allSettled(all.map((e) => e.pool.close()))
    },
  }
}

const subscribed = new WeakSet<ConnectionPools>()

/** Closes this process's pool of a connection whenever any process announces a change of it. */
export function subscribeInvalidations(nc: NatsConnection, names: NatsNames, pools: ConnectionPools): { stop(): void } {
  if (subscribed.has(pools)) return { stop: () => undefined }
  subscribed.add(pools)
  const sub = nc.subscribe(names.subject(INVALIDATE_SUBJECT), {
    callback: (err, msg) => {
      if (err !== null) return
      const id = msg.string()
      if (/^[0-9a-f-]{36}$/i.test(id)) pools.invalidate(id)
    },
  })
  return {
    stop: () => {
      sub.unsubscribe()
      subscribed.delete(pools)
    },
  }
}

/** Announces a change of a connection to every process (core NATS: a process that misses it re-checks on its next use). */
export function announceInvalidation(nc: NatsConnection, names: NatsNames, connectionId: string): void {
  nc.publish(names.subject(INVALIDATE_SUBJECT), connectionId)
}
