import { Type as T } from '@sinclair/typebox'
import { ListQuery } from '../../schemas/common.ts'
import { IdParams, NameParams, NamespacedParams, ResourceVersion } from '../../schemas/resources.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'
import type { AnyKind } from './kind.ts'

/*
 * The management routes of a kind, with fixed paths (docs/http-api.md): namespaced kinds are
 * addressed by `/{namespace}/{name}`; named kinds are read by `/{name}` and changed by `/{id}`.
 */
export type ResourceOp = 'create' | 'list' | 'get' | 'update' | 'delete' | 'versions'

export const resourceRouteId = (kind: AnyKind, op: ResourceOp): string => `${kind.plural}.${op}`

/** The routes of one kind, each keeping its literal type so its handler is typed from it. */
export function resourceRouteSet(kind: AnyKind) {
  const base = `/api/v1/${kind.plural}`
  const tags = [kind.title]
  const adminNote = kind.adminOnly ? ' (admin)' : ''
  const common = { surface: 'management', auth: true, target: 'rpc' } as const
  const one = kind.addressing === 'namespaced' ? `${base}/{namespace}/{name}` : `${base}/{name}`
  const oneParams: typeof NamespacedParams | typeof NameParams =
    kind.addressing === 'namespaced' ? NamespacedParams : NameParams
  const change = kind.addressing === 'namespaced' ? one : `${base}/{id}`
  const changeParams: typeof NamespacedParams | typeof IdParams =
    kind.addressing === 'namespaced' ? NamespacedParams : IdParams
  return {
    create: defineRoute({
      ...common,
      tags,
      id: resourceRouteId(kind, 'create'),
      method: 'POST',
      path: base,
      summary: `Create ${kind.kind}${adminNote}`,
      body: kind.createBody,
      response: kind.record,
      status: 201,
      errors: [409, 422],
    }),
    list: defineRoute({
      ...common,
      tags,
      id: resourceRouteId(kind, 'list'),
      method: 'GET',
      path: base,
      summary: `List ${kind.plural}${adminNote}`,
      query: ListQuery,
      response: T.Array(kind.record),
    }),
    get: defineRoute({
      ...common,
      tags,
      id: resourceRouteId(kind, 'get'),
      method: 'GET',
      path: one,
      summary: `Get ${kind.kind}${adminNote}`,
      params: oneParams,
      response: kind.record,
      errors: [404],
    }),
    update: defineRoute({
      ...common,
      tags,
      id: resourceRouteId(kind, 'update'),
      method: kind.updateMethod,
      path: change,
      summary: `Update ${kind.kind}${adminNote}`,
      params: changeParams,
      body: kind.updateBody,
      response: kind.record,
      errors: [403, 404, 422],
    }),
    delete: defineRoute({
      ...common,
      tags,
      id: resourceRouteId(kind, 'delete'),
      method: 'DELETE',
      path: change,
      summary: `Delete ${kind.kind}${adminNote}`,
      params: changeParams,
      status: 204,
      errors: [403, 404],
    }),
    versions:
      kind.versioned.length > 0
        ? defineRoute({
            ...common,
            tags,
            id: resourceRouteId(kind, 'versions'),
            method: 'GET',
            path: `${one}/versions`,
            summary: `Versions of a ${kind.kind}`,
            params: oneParams,
            response: T.Array(ResourceVersion),
            errors: [404],
          })
        : undefined,
  }
}

export function resourceRoutes(kind: AnyKind): RouteDef[] {
  const r = resourceRouteSet(kind)
  return [r.create, r.list, r.get, r.update, r.delete, ...(r.versions === undefined ? [] : [r.versions])]
}
