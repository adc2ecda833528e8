import {
  featureComponentProxies,
  featureConfigKinds,
  featureHealthChecks,
  featureKinds,
  featurePermissions,
  featureRecordDecorators,
  featureSpecChecks,
} from '../feature/collect.ts'
import type { Feature, ServiceContext } from '../feature/define.ts'
import type { ConfigKind } from '../feature/config-kinds.ts'
import type { StoreKeyProbe } from '../feature/store-key-probe.ts'
import { serveRpc } from '../api/rpc-server.ts'
import { openPrincipalCache } from '../auth/principal-cache.ts'
import { attachPrincipalCache, loadPrincipal } from '../auth/principal.ts'
import { bootstrap } from '../bootstrap.ts'
import { autoApplyConfig } from '../gitops/auto-apply.ts'
import { executionCallbacks } from '../functions/callback.ts'
import { createSecretBox, previousKeys } from '../kernel/crypto.ts'
import { scrapeJobMetrics } from '../jobs/metrics.ts'
import { startJobService, type JobService } from '../jobs/start.ts'
import { createDb, migrate, type Db } from '../platform/db.ts'
import { createResourceService, type ResourceService } from '../resources/service.ts'
import type { Infrastructure } from './infrastructure.ts'
import type { Lifecycle } from './lifecycle.ts'

export interface ServiceRole {
  db: Db
  resources: ResourceService
  jobs: JobService
  superadminId: string
}

/**
 * The resource-service role: migrations, bootstrap, the job service, and every feature's
 * handlers served over NATS request/reply with the caller resolved once per request.
 */
export async function startServiceRole(
  infra: Infrastructure,
  features: readonly Feature[],
  life: Lifecycle,
): Promise<ServiceRole> {
  const { config, log } = infra
  const url = infra.databaseUrl as string
  const db = await createDb(url)
  life.onStop(() => db.end())
  await migrate(url, log.child({ mod: 'migrate' }))
  // principals and API keys come from the AUTH_CACHE bucket when warm (src/auth/principal-cache.ts)
  attachPrincipalCache(db, await openPrincipalCache(infra.nc, infra.names))
  // resource reads come from memory kept coherent over NATS (src/resources/row-cache.ts)
  const resources = createResourceService({
    db,
    log: log.child({ mod: 'resources' }),
    kinds: featureKinds(features),
    specChecks: featureSpecChecks(features, { config, db, databaseUrl: url }),
    box: createSecretBox(config.ENCRYPTION_KEY, previousKeys(config.ENCRYPTION_KEY_PREVIOUS)),
    nats: { nc: infra.nc, names: infra.names },
  })
  life.onStop(async () => resources.close())
  const boot = await bootstrap({ db, config, log, resources })
  // the functions feature's execution callbacks, told by the job mirror once a job's row is final
  const onFinished = [executionCallbacks({ db, config, log })]
  const jobs = await startJobService({ nc: infra.nc, names: infra.names, db, config, log, onFinished })
  life.onStop(() => jobs.close())
  // the pools' backlog and the jobs by state, read at scrape (docs/operations.md#metrics)
  life.onStop(scrapeJobMetrics({ nc: infra.nc, names: infra.names, db }))
  const base = { ...infra, db, resources, jobs }
  let storeKeyProbe: StoreKeyProbe | undefined
  let configKinds: readonly ConfigKind[] | undefined
  const ctx: ServiceContext = {
    ...base,
    permissions: featurePermissions(features),
    componentProxies: featureComponentProxies(features),
    recordDecorators: featureRecordDecorators(features, base),
    storeKeyProbe: () => storeKeyProbe,
    configKinds: () => (configKinds ??= featureConfigKinds(features, ctx)),
    healthChecks: featureHealthChecks(features),
  }
  const routes = []
  for (const f of features) {
    const part = await f.service?.(ctx)
    if (part === undefined) continue
    routes.push(...part.routes)
    if (part.stop !== undefined) life.onStop(part.stop)
    if (part.storeKeyProbe !== undefined) storeKeyProbe = part.storeKeyProbe
  }
  // before serving: a bad CONFIG_FILE stops the start (src/gitops/auto-apply.ts)
  if (config.AUTO_APPLY_CONFIG) await autoApplyConfig(ctx, boot.superadmin)
  const rpc = serveRpc({
    nc: infra.nc,
    names: infra.names,
    routes,
    principal: (caller) => loadPrincipal(db, caller),
    log: log.child({ mod: 'rpc' }),
    inProcess: config.RPC_IN_PROCESS,
  })
  life.onStop(() => rpc.close())
  return { db, resources, jobs, superadminId: boot.superadmin.userId }
}
