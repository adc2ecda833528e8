import { jetstreamManager } from '@nats-io/jetstream'
import { Type as T } from '@sinclair/typebox'
import type { HealthService } from '../../schemas/system.ts'
import { sql, type Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import { oneRow, rowType } from '../platform/typed-rows.ts'
import { serviceRow } from '../feature/health.ts'
import { reasonOf } from './health-service.ts'

/*
 * The infrastructure the platform runs on, as the platform's own connections see it. NATS: the
 * server this process is connected to (`nc.info`: name, version, the cluster's other client URLs),
 * the round trip, and the account's JetStream usage against its limits (`$JS.API.INFO`). A
 * normal user cannot read the server's varz (`$SYS`), so its uptime and process numbers stay
 * null. Postgres: one statement on the platform's pool — version, connections in use against
 * max_connections, uptime since the postmaster started.
 */
const round1 = (n: number): number => Math.round(n * 10) / 10

/** Used against a limit, as a percent; null when the account has none (-1 or 0: unlimited). */
const usedPercent = (used: number, limit: number): number | null => (limit > 0 ? round1((used / limit) * 100) : null)

export async function natsService(nc: NatsConnection): Promise<HealthService> {
  if (nc.isClosed())
    return serviceRow({
      name: 'nats',
      kind: 'infrastructure',
      status: 'down',
      health: 'unhealthy',
      reason: 'connection closed',
    })
  const info = nc.info
  const [rtt, account] = await Promise.all([nc.rtt(), jetstreamManager(nc).then((jsm) => jsm.getAccountInfo())])
  return serviceRow({
    name: 'nats',
    kind: 'infrastructure',
    status: 'up',
    health: 'healthy',
    version: info?.version ?? null,
    instances: 1 + (info?.connect_urls?.length ?? 0),
    details: {
      server_name: info?.server_name ?? null,
      server_id: info?.server_id ?? null,
      cluster: info?.cluster ?? null,
      other_servers: info?.connect_urls ?? [],
      rtt_ms: round1(rtt),
      uptime: 'not readable without the system account ($SYS)',
      jetstream: {
        memory_bytes: account.memory,
        memory_limit_bytes: account.limits.max_memory,
        memory_used_percent: usedPercent(account.memory, account.limits.max_memory),
        storage_bytes: account.storage,
        storage_limit_bytes: account.limits.max_storage,
        storage_used_percent: usedPercent(account.storage, account.limits.max_storage),
        streams: account.streams,
        consumers: account.consumers,
        api_errors: account.api.errors,
      },
    },
  })
}

/** The NATS row when its probe failed: the connection is there but the server does not answer. */
export const natsDown = (err: unknown): HealthService =>
  serviceRow({ name: 'nats', kind: 'infrastructure', status: 'down', health: 'unhealthy', reason: reasonOf(err) })

const PostgresRow = rowType(
  T.Object(
    {
      version: T.String(),
      connections: T.Integer(),
      max_connections: T.Integer(),
      uptime_seconds: T.Number(),
    },
    { title: 'postgres health' },
  ),
)

export async function postgresService(db: Db): Promise<HealthService> {
  const row = await oneRow(
    db,
    PostgresRow,
    sql.unsafe`select current_setting('server_version') as version,
      (select count(*)::int from pg_stat_activity where backend_type = 'client backend') as connections,
      current_setting('max_connections')::int as max_connections,
      extract(epoch from now() - pg_postmaster_start_time())::float8 as uptime_seconds`,
  )
  return serviceRow({
    name: 'postgres',
    kind: 'infrastructure',
    status: 'up',
    health: 'healthy',
    version: row.version,
    instances: 1,
    uptime_seconds: Math.round(row.uptime_seconds),
    details: {
      connections: row.connections,
      max_connections: row.max_connections,
      connections_used_percent: usedPercent(row.connections, row.max_connections),
    },
  })
}

export const postgresDown = (err: unknown): HealthService =>
  serviceRow({ name: 'postgres', kind: 'infrastructure', status: 'down', health: 'unhealthy', reason: reasonOf(err) })
