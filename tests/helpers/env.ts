import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { issueAccessToken } from '../../src/auth/tokens.ts'
import { loadConfig, type Config } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { adminQuery, dropDatabase } from './pg-admin.ts'
import { startPlatform, type Platform } from '../../src/main.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { KINDS } from '../../src/features.ts'
import { announceOutsideWrite } from '../../src/resources/row-cache.ts'
import { forgetAllPrincipals } from '../../src/auth/principal-cache.ts'
import { announceOutsideStateWrite } from '../../src/states/entry-cache.ts'
import { readServices } from '../setup/services.ts'

/*
 * One isolated platform per test file: its own database (copied from the migrated template), its
 * own NATS prefix (subjects, streams, buckets), a gateway on a random port, and a superadmin token.
 * Everything is removed in teardown.
 */
interface Teardown {
  teardown(fn: () => unknown): void
}

let counter = 0

export const SECRET_KEY = 'test-secret-key-test-secret-key-0123456789'
export const ENCRYPTION_KEY = 'test-encryption-key-test-encryption-key-01'

export interface TestPlatform {
  base: string
  config: Config
  platform: Platform
  adminToken: string
  adminId: string
  databaseUrl: string
  /** A new user holding the named roles (default Users) and a token for it. */
  createUser(email: string, roles?: string[]): Promise<{ id: string; token: string }>
  /** A query on the platform's database; writes to resources, users, roles or keys are announced to the platform's caches unless `behindTheBack`. */
  sql<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
    options?: { behindTheBack?: boolean },
  ): Promise<R[]>
  /** POST expecting 201 (anything else throws, with the path and the answer); the created body. */
  create(path: string, body: unknown, token?: string): Promise<unknown>
  /** What a child process (a test folder's worker-platform.ts and the like) needs to join this platform: NATS, database, keys, data folder. */
  childEnv: Record<string, string>
  request(
    method: string,
    path: string,
    options?: { token?: string | null; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> },
  ): Promise<{ status: number; headers: Headers; body: unknown; text: string }>
}

export async function startTestPlatform(t: Teardown, env: Record<string, string> = {}): Promise<TestPlatform> {
  const services = readServices()
  const prefix = `t${String(process.pid)}_${String(++counter)}`
  await adminQuery(services.pgBase, `create database ${prefix} template ${services.template}`)
  const databaseUrl = `${services.pgBase}/${prefix}`
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-test-'))
  const config = loadConfig({
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    NATS_URL: services.natsUrl,
    NATS_PREFIX: prefix,
    DATABASE_URL: databaseUrl,
    SECRET_KEY,
    ENCRYPTION_KEY,
    DATABASE_PASSWORD: 'unused',
    SUPERADMIN_EMAIL: 'admin@test.local',
    // one warm sandbox per test platform (the default pool of 4 is for real deployments)
    SANDBOX_MIN_SIZE: '1',
    SANDBOX_MIN_IDLE: '1',
    ...env,
  })
  const platform = await startPlatform(config, createLogger({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }))
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 })
  t.teardown(async () => {
    await platform.close()
    await pool.end()
    const nc = await connect({ servers: services.natsUrl })
    const jsm = await jetstreamManager(nc)
    for await (const name of jsm.streams.names())
      if (name.startsWith(`${prefix}_`) || name.startsWith(`KV_${prefix}_`) || name.startsWith(`OBJ_${prefix}_`))
        await jsm.streams.delete(name)
    await nc.close()
    await dropDatabase(services.pgBase, prefix)
    rmSync(dataDir, { recursive: true, force: true })
  })
  const base = `http://127.0.0.1:${String(platform.gateway?.port)}`
  const adminId = platform.superadminId as string
  const adminToken = await issueAccessToken(SECRET_KEY, { sub: adminId, email: 'admin@test.local' }, 15)
  const sql = async <R extends pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
    options: { behindTheBack?: boolean } = {},
  ) => {
    const { rows } = await pool.query<R>(text, values)
    if (options.behindTheBack === true) return rows
    // A test that writes resources rows by hand tells the platform's row caches, as an operator must.
    if (/^\s*(update|insert|delete)\b[\s\S]*\bresources\b/i.test(text))
      await announceOutsideWrite(
        platform.nc,
        natsNames(prefix),
        KINDS.map((k) => k.kind),
      )
    // and one that changes users, roles or keys by hand makes every process read them again
    if (/^\s*(update|insert|delete)\b[\s\S]*\b(users|roles|user_roles|api_keys)\b/i.test(text))
      await forgetAllPrincipals(platform.nc, natsNames(prefix))
    // and one that changes state entries by hand makes every process forget the entries it holds
    if (/^\s*(update|insert|delete)\b[\s\S]*\bstates\b/i.test(text))
      await announceOutsideStateWrite(platform.nc, natsNames(prefix))
    return rows
  }
  return {
    base,
    config,
    platform,
    adminToken,
    adminId,
    databaseUrl,
    sql,
    async createUser(email, roles = ['Users']) {
      const [row] = await sql<{ id: string }>('insert into users (email) values ($1) returning id', [email])
      const id = (row as { id: string }).id
      await sql('insert into user_roles (user_id, role_id) select $1, id from roles where name = any($2)', [id, roles])
      return { id, token: await issueAccessToken(SECRET_KEY, { sub: id, email }, 15) }
    },
    async create(path, body, token) {
      const r = await request('POST', path, { body, ...(token === undefined ? {} : { token }) })
      if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
      return r.body
    },
    childEnv: {
      NATS_URL: config.NATS_URL,
      NATS_PREFIX: config.NATS_PREFIX,
      DATABASE_URL: databaseUrl,
      SECRET_KEY,
      ENCRYPTION_KEY,
      DATA_DIR: config.DATA_DIR,
    },
    request,
  }
  async function request(
    method: string,
    path: string,
    options: Parameters<TestPlatform['request']>[2] = {},
  ): ReturnType<TestPlatform['request']> {
    const headers: Record<string, string> = { ...options.headers }
    const token = options.token === undefined ? adminToken : options.token
    if (token !== null) headers['authorization'] = `Bearer ${token}`
    let body: string | Buffer | undefined
    if (options.rawBody !== undefined) body = options.rawBody
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body }) })
    const text = await res.text()
    let parsed: unknown = undefined
    try {
      parsed = text === '' ? undefined : JSON.parse(text)
    } catch {
      parsed = undefined
    }
    return { status: res.status, headers: res.headers, body: parsed, text }
  }
}
