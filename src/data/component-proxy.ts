import type { ProxyExecutorFactory } from '../feature/component-proxy.ts'
import { executableQuery, runQuery } from './execute.ts'
import { connectionPools } from './pools.ts'

/*
 * The components' query proxy (`/proxy/queries/{ns}/{name}/execute`): the query runs as the acting
 * principal through the same path as POST /queries/{ns}/{name}/execute (execute permission, input
 * and output schemas, read-only transaction, limits). The pools are this process's one registry.
 */
export const queryProxy: ProxyExecutorFactory = (ctx) => {
  const log = ctx.log.child({ mod: 'data' })
  const deps = {
    db: ctx.db,
    config: ctx.config,
    resources: ctx.resources,
    pools: connectionPools({ db: ctx.db, resources: ctx.resources, config: ctx.config, log }),
    log,
  }
  return async ({ principal: p, target, body }) => {
    const q = await executableQuery(deps, p, target.namespace, target.name)
    const input = (body['input'] ?? {}) as Record<string, unknown>
    return { body: await runQuery(deps, p, q, input) }
  }
}
