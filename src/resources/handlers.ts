import { bind, type BoundRoute } from '../api/bind.ts'
import { decorateRecords, type RecordDecorator } from './decorate.ts'
import { resourceRouteSet } from './routes.ts'
import type { Address, ResourceService } from './service.ts'

type AddressParams = { namespace: string; name: string } | { name: string } | { id: string }

/** A kind's address from its validated path parameters (namespaced, by name, or by id). */
const addressOf = (params: AddressParams): Address =>
  'id' in params
    ? { id: params.id }
    : 'namespace' in params
      ? { namespace: params.namespace, name: params.name }
      : { name: params.name }

/** Binds every kind's management routes to the generic resource service. */
/** `decorators`: the features' read-time additions to the records answered. */
export function resourceHandlers(service: ResourceService, decorators: readonly RecordDecorator[]): BoundRoute[] {
  const bound: BoundRoute[] = []
  for (const kind of service.kinds.values()) {
    const r = resourceRouteSet(kind)
    bound.push(
      bind(r.create, async ({ principal, body }) => ({
        status: 201,
        body: (await decorateRecords(decorators, principal, kind, [await service.create(principal, kind, body)]))[0],
      })),
      bind(r.list, async ({ principal, query }) => {
        const namespaces = query.namespace?.split(',').filter(Boolean)
        const { items, total } = await service.list(principal, kind, {
          ...(namespaces === undefined ? {} : { namespaces }),
          limit: query.limit ?? 100,
          offset: query.offset ?? 0,
        })
        return {
          body: await decorateRecords(decorators, principal, kind, items),
          headers: { 'x-total-count': String(total) },
        }
      }),
      bind(r.get, async ({ principal, params }) => ({
        body: (
          await decorateRecords(decorators, principal, kind, [await service.get(principal, kind, addressOf(params))])
        )[0],
      })),
      bind(r.update, async ({ principal, params, body }) => ({
        body: (
          await decorateRecords(decorators, principal, kind, [
            await service.update(principal, kind, addressOf(params), body, { managedBy: null }),
          ])
        )[0],
      })),
      bind(r.delete, async ({ principal, params }) => {
        await service.remove(principal, kind, addressOf(params))
        return { status: 204 }
      }),
    )
    if (r.versions !== undefined)
      bound.push(
        bind(r.versions, async ({ principal, params }) => ({
          body: await service.versions(principal, kind, addressOf(params)),
        })),
      )
  }
  return bound
}
