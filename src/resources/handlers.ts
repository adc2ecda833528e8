import type { RpcHandler, RpcRequest } from '../api/route.ts'
import { loadPrincipal, type Principal } from '../auth/principal.ts'
import { unauthorized } from '../kernel/errors.ts'
import type { Db } from '../platform/db.ts'
import type { AnyKind } from './kind.ts'
import { resourceRouteId } from './routes.ts'
import type { Address, ResourceService } from './service.ts'

/** Binds every kind's management routes to the generic resource service. */
export function resourceHandlers(service: ResourceService, db: Db): Map<string, RpcHandler> {
  const handlers = new Map<string, RpcHandler>()
  const principalOf = async (req: RpcRequest): Promise<Principal> => {
    if (req.caller === null) throw unauthorized()
    return loadPrincipal(db, req.caller)
  }
  for (const kind of service.kinds.values()) {
    const addressOf = (req: RpcRequest): Address => {
      const { namespace, name, id } = req.params
      if (id !== undefined) return { id }
      return kind.addressing === 'namespaced' ? { namespace: namespace ?? 'default', name: name ?? '' } : { name: name ?? '' }
    }
    const on = (op: Parameters<typeof resourceRouteId>[1], fn: (p: Principal, req: RpcRequest, k: AnyKind) => Promise<{ status?: number; body?: unknown; headers?: Record<string, string> }>) =>
      handlers.set(resourceRouteId(kind, op), async (req) => {
        const out = await fn(await principalOf(req), req, kind)
        return { status: out.status ?? 200, body: out.body, ...(out.headers === undefined ? {} : { headers: out.headers }) }
      })
    on('create', async (p, req, k) => ({ status: 201, body: await service.create(p, k, req.body as Record<string, unknown>) }))
    on('list', async (p, req, k) => {
      const q = req.query
      const namespaces = typeof q['namespace'] === 'string' ? q['namespace'].split(',').filter(Boolean) : undefined
      const { items, total } = await service.list(p, k, {
        ...(namespaces === undefined ? {} : { namespaces }),
        limit: typeof q['limit'] === 'number' ? q['limit'] : 100,
        offset: typeof q['offset'] === 'number' ? q['offset'] : 0,
      })
      return { body: items, headers: { 'x-total-count': String(total) } }
    })
    on('get', async (p, req, k) => ({ body: await service.get(p, k, addressOf(req)) }))
    on('update', async (p, req, k) => ({ body: await service.update(p, k, addressOf(req), req.body as Record<string, unknown>, { managedBy: null }) }))
    on('delete', async (p, req, k) => {
      await service.remove(p, k, addressOf(req))
      return { status: 204 }
    })
    if (kind.versioned.length > 0) on('versions', async (p, req, k) => ({ body: await service.versions(p, k, addressOf(req)) }))
  }
  return handlers
}
