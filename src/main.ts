import { randomUUID } from 'node:crypto'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { RouteDef } from './api/route.ts'
import { serveRpc } from './api/rpc-server.ts'
import { bootstrap } from './bootstrap.ts'
import { KINDS } from './kinds/index.ts'
import type { Config } from './kernel/config.ts'
import { createSecretBox, previousKeys } from './kernel/crypto.ts'
import type { Logger } from './kernel/log.ts'
import { createDb, migrate, type Db } from './platform/db.ts'
import { ensureServerPackages, startNats, startPostgres } from './platform/local-services.ts'
import { superviseService, type SupervisedService } from './platform/supervisor.ts'
import { startHealthMonitor } from './platform/health.ts'
import { workersBucket } from './platform/heartbeat.ts'
import { natsNames } from './platform/nats-names.ts'
import { closeNats, connectNats, probeNats, provisionNats, type NatsConnection } from './platform/nats.ts'
import { resourceHandlers } from './resources/handlers.ts'
import { resourceRoutes } from './resources/routes.ts'
import { createResourceService, type ResourceService } from './resources/service.ts'
import { startGateway, type Gateway } from '../gateway/server.ts'
import { systemRoutes } from './api/system-routes.ts'
import { jobExecutors } from './jobs/executors.ts'
import { buildActors } from '../actors/index.ts'
import { startActorHost } from '../actors/runtime/host.ts'
import { jobRoutes } from './jobs/routes.ts'
import { identityRoutes } from './identity/routes.ts'
import { accessRoutes } from './access/routes.ts'
import { accessHandlers } from './access/handlers.ts'
import { openPrincipalCache } from './access/principal-cache.ts'
import { attachPrincipalCache, loadPrincipal } from './auth/principal.ts'
import { identityHandlers } from './identity/service.ts'
import { checkMailer, createMailer } from './identity/mailer.ts'
import { createRateLimiter, openRateLimits } from './identity/rate-limit.ts'
import { provisionJobLayout, startJobService, startJobWorkers, type JobService } from './jobs/start.ts'
import { functionRoutes } from './functions/routes.ts'
import { functionHandlers } from './functions/handlers.ts'
import { functionJobExecutor } from './functions/job-executor.ts'
import { createSandboxExecutor, type SandboxExecutor } from '../sandbox/executor.ts'
import { startSandboxControl } from '../sandbox/control.ts'
import { jetstream } from '@nats-io/jetstream'
import { chatAbandonedTurnHandler } from '../actors/chat/abandoned-turn.ts'
import { startExpiredChatSweep } from '../actors/chat/expiry.ts'
import { chatStreamEmitter } from '../actors/chat/stream-emitter.ts'
import { chatRoutes } from './chats/routes.ts'
import { chatHandlers } from './chats/handlers.ts'
import { chatTurnExecutor } from './chats/worker.ts'
import { openJobStateStore } from './jobs/job-state.ts'
import { openResultStore } from './jobs/result-store.ts'
import { maxDepthOf } from './jobs/start.ts'
import { sandboxAdminHandlers, sandboxAdminRoutes } from './functions/admin.ts'
import { dependencyHandlers } from './dependencies/handlers.ts'
import { dependencyRoutes } from './dependencies/routes.ts'
import { adapterRoutes } from './adapter/routes.ts'
import { adapterHandlers } from './adapter/handlers.ts'
import { currentPackagesDir, installApprovedPackages } from './dependencies/installer.ts'
import { namespaceRoutes } from './namespaces/routes.ts'
import { namespaceHandlers } from './namespaces/handlers.ts'

/*
 * The composition root. `startPlatform` brings up what the configuration asks for, in order:
 * local servers (single-node mode) → NATS probe and layout → Postgres migrations → bootstrap →
 * service handlers → gateway. `close()` undoes it in reverse.
 */
export const VERSION = (JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string }).version

export type Role = 'gateway' | 'resources' | 'workers' | 'actors'

export function rolesOf(config: Config): Set<Role> {
  const all: Role[] = ['gateway', 'resources', 'workers', 'actors']
  const asked = config.ROLES.split(',').map((s) => s.trim()).filter(Boolean)
  if (asked.includes('all')) return new Set(all)
  const unknown = asked.filter((r) => !all.includes(r as Role))
  if (unknown.length > 0) throw new Error(`unknown ROLES: ${unknown.join(', ')} (known: all, ${all.join(', ')})`)
  return new Set(asked as Role[])
}

/** Every route of the platform: what the gateway serves and the documents describe. */
export function allRoutes(): RouteDef[] {
  return [...systemRoutes(), ...identityRoutes(), ...KINDS.flatMap(resourceRoutes), ...jobRoutes(), ...functionRoutes(), ...chatRoutes(), ...sandboxAdminRoutes(), ...accessRoutes(), ...namespaceRoutes(), ...dependencyRoutes(), ...adapterRoutes()]
}

export interface Platform {
  gateway: Gateway | undefined
  natsUrl: string
  databaseUrl: string | undefined
  db: Db | undefined
  nc: NatsConnection
  resources: ResourceService | undefined
  jobs: JobService | undefined
  /** The sandbox executor of this process's function workers (ROLES includes workers). */
  sandboxes: SandboxExecutor | undefined
  superadminId: string | undefined
  /** Single-node mode's own nats-server and Postgres, each restarted when it dies. */
  local: { nats?: SupervisedService; postgres?: SupervisedService }
  /** Stops everything; bounded even when NATS or Postgres is gone (see STOP_BUDGET_MS). */
  close(): Promise<void>
  /** Last resort of a forced exit: signals the local servers to stop and returns at once. */
  abort(): void
}

/**
 * How long the platform's own shutdown steps may take together before the rest is abandoned and
 * the local servers are stopped anyway. With NATS or Postgres down a drain or a final write can
 * wait forever; Ctrl-C must not.
 */
const STOP_BUDGET_MS = 5_000

async function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), Math.max(0, ms))))])
  } finally {
    clearTimeout(timer)
  }
}

export function databaseUrlOf(config: Config): string | undefined {
  if (config.DATABASE_URL !== '') return config.DATABASE_URL
  if (config.DATABASE_HOST === '') return undefined
  const auth = `${encodeURIComponent(config.DATABASE_USER)}:${encodeURIComponent(config.DATABASE_PASSWORD)}`
  return `postgres://${auth}@${config.DATABASE_HOST}:${String(config.DATABASE_PORT)}/${encodeURIComponent(config.DATABASE_NAME)}`
}

export async function startPlatform(config: Config, log: Logger): Promise<Platform> {
  const roles = rolesOf(config)
  const cleanups: (() => Promise<void>)[] = []
  // The local servers stop last, after the steps that still talk to them, whatever those did.
  const local: { nats?: SupervisedService; postgres?: SupervisedService } = {}
  let natsClient: NatsConnection | undefined
  const close = async () => {
    const deadline = Date.now() + STOP_BUDGET_MS
    for (const fn of cleanups.reverse()) {
      const left = deadline - Date.now()
      const r = await within(fn(), left).catch((err: unknown) => log.warn({ err }, 'shutdown step failed'))
      if (r === 'timeout') {
        log.warn({ budgetMs: STOP_BUDGET_MS }, 'shutdown steps took too long: stopping the rest without waiting')
        break
      }
    }
    cleanups.length = 0
    if (natsClient !== undefined && !natsClient.isClosed()) await natsClient.close().catch(() => undefined)
    for (const svc of [local.postgres, local.nats]) await svc?.stop().catch((err: unknown) => log.warn({ err }, 'stopping a local server failed'))
    local.postgres = undefined
    local.nats = undefined
  }
  const abort = () => {
    local.postgres?.signal()
    local.nats?.signal()
  }
  try {
    // Refuse a configuration that cannot work before starting anything (otp modes need SMTP in production).
    if (roles.has('resources')) checkMailer(config)
    let natsUrl = config.NATS_URL
    let databaseUrl = roles.has('resources') || roles.has('workers') ? databaseUrlOf(config) : undefined
    const needLocalPg = roles.has('resources') && databaseUrl === undefined
    if (natsUrl === '' || needLocalPg) {
      ensureServerPackages(log)
      mkdirSync(config.DATA_DIR, { recursive: true })
    }
    if (natsUrl === '') {
      const natsLog = log.child({ mod: 'nats-server' })
      const dir = join(config.DATA_DIR, 'nats')
      local.nats = await superviseService({ name: 'nats-server', log: natsLog, start: (port) => startNats({ dir, port: port ?? 4222, exactPort: port !== undefined, log: natsLog }) })
      natsUrl = local.nats.url
    }
    if (needLocalPg) {
      const pgLog = log.child({ mod: 'postgres' })
      const dir = join(config.DATA_DIR, 'pg')
      local.postgres = await superviseService({
        name: 'postgres',
        log: pgLog,
        start: (port) => startPostgres({ dir, port: port ?? 5432, exactPort: port !== undefined, password: config.DATABASE_PASSWORD, database: config.DATABASE_NAME, log: pgLog }),
      })
      databaseUrl = local.postgres.url
    }

    const names = natsNames(config.NATS_PREFIX)
    const nc = await connectNats(natsUrl, `platform:${[...roles].join('+')}`, log.child({ mod: 'nats' }))
    natsClient = nc
    cleanups.push(() => closeNats(nc))
    const caps = await probeNats(nc)
    log.info({ nats: caps }, 'nats capabilities')
    await provisionNats(nc, names, log.child({ mod: 'nats' }), { rateLimitWindowSeconds: config.RATE_LIMIT_WINDOW_SECONDS })
    await provisionJobLayout(nc, names, config, log.child({ mod: 'nats' }))

    let db: Db | undefined
    let resources: ResourceService | undefined
    let superadminId: string | undefined
    let jobs: JobService | undefined
    if (roles.has('resources')) {
      db = await createDb(databaseUrl as string)
      const pool = db
      cleanups.push(() => pool.end())
      await migrate(databaseUrl as string, log.child({ mod: 'migrate' }))
      // principals and API keys come from the AUTH_CACHE bucket when warm (src/access/principal-cache.ts)
      attachPrincipalCache(db, await openPrincipalCache(nc, names))
      resources = createResourceService({ db, log: log.child({ mod: 'resources' }), kinds: KINDS, box: createSecretBox(config.ENCRYPTION_KEY, previousKeys(config.ENCRYPTION_KEY_PREVIOUS)) })
      const boot = await bootstrap({ db, config, log, resources })
      superadminId = boot.superadmin.userId
      const jobService = await startJobService({ nc, names, db, config, log })
      jobs = jobService
      cleanups.push(() => jobService.close())
      const limiter = createRateLimiter(await openRateLimits(nc, names), config.RATE_LIMIT_WINDOW_SECONDS)
      const identity = identityHandlers({ db, config, mailer: createMailer(config, log.child({ mod: 'mail' })), limiter, log: log.child({ mod: 'identity' }) })
      const depsLog = log.child({ mod: 'dependencies' })
      const installer = async () => {
        const r = await installApprovedPackages({ db: pool, config, log: depsLog })
        return { dir: r.dir, failed: r.failed.length }
      }
      const functions = functionHandlers({ db, nc, names, config, resources, jobs: jobService, log: log.child({ mod: 'functions' }) })
      const chats = chatHandlers({ db, nc, js: jetstream(nc), names, config, resources, jobStore: jobService.store })
      const adapter = adapterHandlers({ db, nc, js: jetstream(nc), names, config, resources, jobStore: jobService.store, log: log.child({ mod: 'adapter' }) })
      cleanups.push(startExpiredChatSweep({ db: pool, log }))
      const bound = [...chats, ...resourceHandlers(resources), ...jobService.handlers, ...functions, ...sandboxAdminHandlers({ db, nc, names, installPackages: installer }), ...identity, ...accessHandlers(db), ...namespaceHandlers(db), ...dependencyHandlers({ db, config }), ...adapter]
      const serviceDb = db
      const rpc = serveRpc({ nc, names, routes: bound, principal: (caller) => loadPrincipal(serviceDb, caller), log: log.child({ mod: 'rpc' }) })
      cleanups.push(() => rpc.close())
    }

    let sandboxes: SandboxExecutor | undefined
    if (roles.has('workers')) {
      if (databaseUrl === undefined) throw new Error('ROLES=workers needs DATABASE_URL (function code is read from Postgres)')
      let workerDb = db
      if (workerDb === undefined) {
        const own = await createDb(databaseUrl)
        cleanups.push(() => own.end())
        workerDb = own
      }
      // sandboxes mount the packages of the last successful install (POST /api/v1/containers/reload)
      const sbx = await createSandboxExecutor(config, log.child({ mod: 'sandbox' }), { packagesDir: currentPackagesDir(config) })
      sandboxes = sbx
      cleanups.push(() => sbx.close())
      const control = await startSandboxControl({ nc, names, sandboxes: sbx, log: log.child({ mod: 'sandbox' }) })
      cleanups.push(() => control.stop())
      const box = createSecretBox(config.ENCRYPTION_KEY, previousKeys(config.ENCRYPTION_KEY_PREVIOUS))
      const workerResources = resources ?? createResourceService({ db: workerDb, log: log.child({ mod: 'resources' }), kinds: KINDS, box })
      const js = jetstream(nc)
      const jobStore = await openJobStateStore(nc, names)
      const enqueue = { js, names, store: jobStore, db: workerDb, maxDepth: maxDepthOf(config) }
      const invoke = { nc, names, config, enqueue, store: jobStore, results: await openResultStore(nc, names) }
      const turn = chatTurnExecutor({
        db: workerDb,
        nc,
        js,
        names,
        config,
        resources: workerResources,
        invoke,
        jobStore,
        emitter: chatStreamEmitter({ nc, js, names }),
        log: log.child({ mod: 'turn' }),
      })
      const executors = { ...jobExecutors(), fn: functionJobExecutor({ resources: workerResources, config, sandboxes: sbx }), agent: turn, subagent: turn }
      const abandoned = chatAbandonedTurnHandler({ js, names })
      const workers = await startJobWorkers({ nc, names, config, log: log.child({ mod: 'worker' }), executors, onAbandoned: { agent: abandoned, subagent: abandoned } })
      cleanups.push(() => workers.stop())
    }

    if (roles.has('actors')) {
      const host = await startActorHost({
        nc,
        names,
        nodeId: randomUUID().slice(0, 8),
        actors: await buildActors({ nc, js: jetstream(nc), names, config, log }),
        log: log.child({ mod: 'actors' }),
        leaseTtlMs: config.ACTOR_LEASE_TTL_SECONDS * 1000,
        ackWaitMs: config.ACTOR_ACK_WAIT_SECONDS * 1000,
      })
      cleanups.push(() => host.stop())
    }

    let gateway: Gateway | undefined
    if (roles.has('gateway')) {
      // Postgres only where this process has a database; an edge gateway reports the workers' heartbeats.
      const localPg = local.postgres
      const monitor = await startHealthMonitor({
        nc,
        workers: await workersBucket(nc, names),
        ...(databaseUrl === undefined ? {} : { databaseUrl }),
        ...(localPg === undefined ? {} : { postgresRunning: () => localPg.state() === 'running' }),
        log: log.child({ mod: 'health' }),
      })
      cleanups.push(async () => monitor.stop())
      gateway = await startGateway(
        { health: () => monitor.components(), nc, names, routes: allRoutes(), log: log.child({ mod: 'gateway' }), secretKey: config.SECRET_KEY, corsOrigins: config.CORS_ORIGINS, trustedProxies: config.TRUSTED_PROXIES, maxBodyBytes: config.HTTP_MAX_BODY_BYTES, version: VERSION, sse: { pingMs: config.SSE_PING_SECONDS * 1000, maxBufferBytes: config.SSE_MAX_BUFFER_BYTES, idleTimeoutMs: config.SSE_IDLE_TIMEOUT_SECONDS * 1000 } },
        config.HOST,
        config.PORT,
      )
      const gw = gateway
      cleanups.push(async () => gw.close())
    }

    if (local.nats !== undefined || local.postgres !== undefined) {
      const file = join(config.DATA_DIR, 'runtime.json')
      writeFileSync(file, JSON.stringify({ pid: process.pid, natsUrl, databaseUrl, gatewayPort: gateway?.port }, null, 2))
      chmodSync(file, 0o600)
    }
    return { gateway, natsUrl, databaseUrl, db, nc, resources, jobs, sandboxes, superadminId, local, close, abort }
  } catch (err) {
    await close()
    throw err
  }
}
