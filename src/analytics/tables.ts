import type { ClickHouseHttp } from './clickhouse-http.ts'

/*
 * The two log tables, created at start (`CREATE … IF NOT EXISTS`): MergeTree partitioned by the
 * UTC day (`toYYYYMMDD(ts)`, partition ids like `20261205`). Retention (ANALYTICS_RETENTION_DAYS)
 * depends on the server: table TTL exists since ClickHouse 19.6, so a newer server gets
 * `TTL ts + INTERVAL N DAY` (re-applied at every start with MODIFY TTL, so a changed setting
 * takes effect); an older one — Debian's 18.16 — has none, and the writer runs `sweepPartitions`
 * hourly instead, dropping whole day partitions older than the retention.
 */
export const REQUEST_LOGS = 'request_logs'
export const EXECUTION_LOGS = 'execution_logs'

const COLUMNS: Record<string, string> = {
  [REQUEST_LOGS]: `ts DateTime('UTC'), ts_ms UInt64, method String, route String, status UInt16,
    duration_ms Float64, user_id String, namespace String, bytes_in UInt64, bytes_out UInt64,
    client_ip String, request_id String, trace_id String`,
  [EXECUTION_LOGS]: `ts DateTime('UTC'), ts_ms UInt64, execution_id String, kind String, namespace String,
    name String, pool String, user_id String, status String, attempt UInt32, duration_ms Float64,
    error_code String, error String, trigger_type String, trace_id String`,
}

const ORDER: Record<string, string> = {
  [REQUEST_LOGS]: '(ts, request_id)',
  [EXECUTION_LOGS]: '(ts, execution_id)',
}

/** `major.minor…` → whether table TTL exists there (19.6 and later). */
export function supportsTtl(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map((p) => Number(p))
  return major > 19 || (major === 19 && minor >= 6)
}

export interface Setup {
  version: string
  ttl: boolean
}

/** A database name that is safe as an identifier (checked by the feature's preflight). */
export const DATABASE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

export async function setupTables(ch: ClickHouseHttp, database: string, retentionDays: number): Promise<Setup> {
  const [row] = await ch.select<{ v: string }>('SELECT version() AS v')
  const version = row?.v ?? '0'
  const ttl = supportsTtl(version)
  await ch.exec(`CREATE DATABASE IF NOT EXISTS ${database}`)
  for (const table of [REQUEST_LOGS, EXECUTION_LOGS]) {
    const ttlClause = ttl ? ` TTL ts + INTERVAL ${String(retentionDays)} DAY` : ''
    await ch.exec(
      `CREATE TABLE IF NOT EXISTS ${database}.${table} (${COLUMNS[table] as string}) ENGINE = MergeTree PARTITION BY toYYYYMMDD(ts) ORDER BY ${ORDER[table] as string}${ttlClause}`,
    )
    if (ttl) await ch.exec(`ALTER TABLE ${database}.${table} MODIFY TTL ts + INTERVAL ${String(retentionDays)} DAY`)
  }
  return { version, ttl }
}

/** `20261205` of the UTC day `days` before `now`. */
export function partitionOf(now: number, days: number): number {
  const d = new Date(now - days * 86_400_000)
  return d.getUTCFullYear() * 10_000 + (d.getUTCMonth() + 1) * 100 + d.getUTCDate()
}

/**
 * Drops the day partitions of both tables older than `retentionDays` (a server without TTL).
 * Partition ids come from `system.parts` and are checked to be 8 digits before they are named in
 * the ALTER. Answers the partitions dropped, as `<table>/<id>`.
 */
export async function sweepPartitions(
  ch: ClickHouseHttp,
  database: string,
  retentionDays: number,
  now = Date.now(),
): Promise<string[]> {
  const oldest = partitionOf(now, retentionDays)
  const parts = await ch.select<{ table: string; partition_id: string }>(
    `SELECT DISTINCT table, partition_id FROM system.parts
     WHERE active AND database = (SELECT db FROM _params) AND table IN ('${REQUEST_LOGS}', '${EXECUTION_LOGS}')`,
    { db: { type: 'String', value: database } },
  )
  const dropped: string[] = []
  for (const p of parts) {
    if (!/^\d{8}$/.test(p.partition_id) || Number(p.partition_id) >= oldest) continue
    await ch.exec(
      `ALTER TABLE ${database}.${p.table === REQUEST_LOGS ? REQUEST_LOGS : EXECUTION_LOGS} DROP PARTITION ${p.partition_id}`,
    )
    dropped.push(`${p.table}/${p.partition_id}`)
  }
  return dropped
}
