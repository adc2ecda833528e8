import { featureKinds, featureSpecChecks, featureTools } from '../feature/collect.ts'
import type { Feature, WorkerPart } from '../feature/define.ts'
import { startSandboxControl } from '../../sandbox/control.ts'
import { createSandboxExecutor, type SandboxExecutor } from '../../sandbox/executor.ts'
import { currentPackagesDir } from '../dependencies/installer.ts'
import { createSecretBox, previousKeys } from '../kernel/crypto.ts'
import { openJobStateStore } from '../jobs/job-state.ts'
import { localJobs } from '../jobs/local-run.ts'
import { openResultStore } from '../jobs/result-store.ts'
import { maxDelayOf, maxDepthOf, startJobWorkers } from '../jobs/start.ts'
import { createDb } from '../platform/db.ts'
import { createResourceService } from '../resources/service.ts'
import { onScrape, sandboxes as sandboxGauge, sandboxesMax, sandboxWaiting } from '../platform/metrics.ts'
import type { Infrastructure } from './infrastructure.ts'
import type { Lifecycle } from './lifecycle.ts'
import type { ServiceRole } from './service.ts'

/**
 * The workers role: the sandbox pool and the job pools, each pool running what the features
 * contribute (functions → fn, chats → agent and subagent). Reuses the service role's database and
 * resource engine when this process has them.
 */
export async function startWorkerRole(
  infra: Infrastructure,
  features: readonly Feature[],
  life: Lifecycle,
  service: ServiceRole | undefined,
): Promise<SandboxExecutor> {
  const { config, log, nc, names, js } = infra
  if (infra.databaseUrl === undefined)
    throw new Error('ROLES=workers needs DATABASE_URL (function code is read from Postgres)')
  let db = service?.db
  if (db === undefined) {
    const own = await createDb(infra.databaseUrl)
    life.onStop(() => own.end())
    db = own
  }
  // sandboxes mount the packages of the last successful install (POST /api/v1/containers/reload)
  const packagesDir = currentPackagesDir(config)
  const local = await createSandboxExecutor(config, log.child({ mod: 'sandbox' }), { packagesDir })
  life.onStop(() => local.close())
  life.onStop(
    onScrape(() => {
      const s = local.stats()
      sandboxGauge.inc({ state: 'idle' }, s.idle)
      sandboxGauge.inc({ state: 'in_use' }, s.in_use)
      sandboxGauge.inc({ state: 'starting' }, s.starting)
      sandboxesMax.inc(s.max_size)
      sandboxWaiting.inc(s.waiting)
    }),
  )
  // the pools converge to their pool actors' state (actors/pool/); executions stay local
  const control = await startSandboxControl({
    nc,
    names,
    sandboxes: local,
    config,
    packagesDir,
    log: log.child({ mod: 'sandbox' }),
  })
  life.onStop(() => control.stop())
  const sandboxes = control.executor
  const resources =
    service?.resources ??
    createResourceService({
      db,
      log: log.child({ mod: 'resources' }),
      kinds: featureKinds(features),
      specChecks: featureSpecChecks(features, { config, db, databaseUrl: infra.databaseUrl }),
      box: createSecretBox(config.ENCRYPTION_KEY, previousKeys(config.ENCRYPTION_KEY_PREVIOUS)),
      nats: { nc, names },
    })
  if (service === undefined) life.onStop(async () => resources.close())
  const jobStore = await openJobStateStore(nc, names)
  const invoke = {
    nc,
    names,
    config,
    enqueue: { js, names, store: jobStore, db, maxDepth: maxDepthOf(config), maxDelaySeconds: maxDelayOf(config) },
    store: jobStore,
    results: await openResultStore(nc, names),
  }
  const ctx = { ...infra, db, resources, sandboxes, jobStore, invoke, tools: featureTools(features) }
  const merged: Required<WorkerPart> = { executors: {}, onAbandoned: {} }
  for (const f of features) {
    const part = await f.workers?.(ctx)
    Object.assign(merged.executors, part?.executors)
    Object.assign(merged.onAbandoned, part?.onAbandoned)
  }
  const workers = await startJobWorkers({
    nc,
    names,
    config,
    log: log.child({ mod: 'worker' }),
    executors: merged.executors,
    onAbandoned: merged.onAbandoned,
  })
  life.onStop(() => workers.stop())
  if (config.AGENT_LOCAL_TURNS) infra.localJobs = localJobs(workers.workers)
  return sandboxes
}
