import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { AppError } from '../kernel/errors.ts'
import type { ConnectionSettings } from './drivers/types.ts'

/*
 * A database connection must not lead to the platform's own database unless an administrator says
 * so on the connection (`allow_platform_database: true`): a query on it would read the platform's
 * users, tokens and secrets, and its role is usually the cluster's superuser. "The same database" is
 * the same port and database name on a host that is the platform's: the host of DATABASE_URL (or
 * DATABASE_HOST), or — for a Unix socket or a loopback address, as the single-node mode's local
 * cluster — any address of this machine.
 *
 * Host names are resolved here too, so a name that does not resolve is told apart from an
 * unreachable server: 502 `upstream.dns_failed`, naming the host (503 would say the platform's own
 * database is down).
 */
export interface PlatformDatabase {
  /** Addresses the platform's database listens on, or 'local' for this machine's (socket, loopback). */
  hosts: string[] | 'local'
  port: number
  database: string
}

/** The platform's database as its URL names it; undefined without a URL. */
export function platformDatabaseOf(url: string | undefined): PlatformDatabase | undefined {
  if (url === undefined || url === '') return undefined
  let u: URL
  try {
    // libpq's socket forms without a host (`postgres://u:p@/db?host=/run/postgresql`, `postgres:///db`)
    u = new URL(url.replace(/@\//, '@localhost/').replace(/^(postgres(?:ql)?:\/\/)\//, '$1localhost/'))
  } catch {
    return undefined
  }
  const host = decodeURIComponent(u.hostname).replace(/^\[|\]$/g, '')
  const socket = u.searchParams.get('host')
  const local =
    host === '' || host.startsWith('/') || (socket !== null && socket.startsWith('/')) || isLoopbackName(host)
  return {
    hosts: local ? 'local' : [host.toLowerCase()],
    port: Number(u.port || 5432),
    database: decodeURIComponent(u.pathname.replace(/^\//, '')),
  }
}

const isLoopbackName = (h: string) => h === 'localhost' || /^127\./.test(h) || h === '::1'

function localAddresses(): Set<string> {
  const out = new Set(['127.0.0.1', '::1'])
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.add(a.address)
  return out
}

/** The host's addresses; 502 upstream.dns_failed when the name does not resolve. */
export async function resolveHost(host: string): Promise<string[]> {
  const bare = host.replace(/^\[|\]$/g, '')
  if (isIP(bare) !== 0) return [bare]
  try {
    return (await lookup(bare, { all: true })).map((a) => a.address)
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA')
      throw AppError.of('upstream.dns_failed', `the host name ${bare} did not resolve (${String(code)})`)
    throw err
  }
}

/**
 * Refuses (422 database.platform_database) settings that reach the platform's own database unless
 * `allowed`; resolves the host on the way, for every type (502 upstream.dns_failed). Only Postgres
 * connections can lead to it.
 */
export async function assertNotPlatformDatabase(
  s: Pick<ConnectionSettings, 'type' | 'host' | 'port' | 'database' | 'username'>,
  own: PlatformDatabase | undefined,
  allowed: boolean,
): Promise<void> {
  const addresses = await resolveHost(s.host)
  if (s.type !== 'postgresql' || own === undefined || allowed) return
  const database = s.database === '' ? s.username : s.database
  if (s.port !== own.port || database !== own.database) return
  const theirs = own.hosts === 'local' ? localAddresses() : new Set(own.hosts)
  if (own.hosts !== 'local') {
    // the platform's host may be a name as well: compare addresses
    for (const h of own.hosts) for (const a of await resolveHost(h).catch(() => [])) theirs.add(a)
  }
  const local = localAddresses()
  const same =
    addresses.some((a) => theirs.has(a) || (own.hosts === 'local' && (local.has(a) || isLoopbackName(a)))) ||
    theirs.has(s.host.toLowerCase())
  if (same) {
    throw AppError.of(
      'database.platform_database',
      `the connection leads to the platform's own database (${s.host}:${String(s.port)}/${database}); an administrator may allow it with allow_platform_database: true`,
    )
  }
}
