import { Type as T } from '@sinclair/typebox'
import { StateCreateBody, StateEntry, StateListQuery, StateParams, StatePutBody, StoreParams } from '../../schemas/store.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * State entries of a store (WIRE.md "Stores and states"; SPEC.md §4.10's `/states` group maps onto
 * these). The store itself is managed under /api/v1/stores (the `store` kind). Shapes live in
 * schemas/store.ts.
 */
const rpc = { auth: true as const, target: 'rpc' as const, surface: 'runtime' as const, tags: ['States'] }
const base = '/stores/{namespace}/{name}/states'

export const STATE_ROUTES = {
  list: defineRoute({
    ...rpc,
    id: 'states.list',
    method: 'GET',
    path: base,
    summary: 'Entries of a store the caller may see, by key; `search` is a key prefix, `tags` must all match, `owner` a user id or `me` (total in X-Total-Count)',
    params: StoreParams,
    query: StateListQuery,
    response: T.Array(StateEntry),
    errors: [403, 404],
  }),
  create: defineRoute({
    ...rpc,
    id: 'states.create',
    method: 'POST',
    path: base,
    summary: 'Create an entry (409 `state.exists` when the key is in use; 422 `state.invalid_value` against a strict store schema; 413 `state.too_large` beyond STATE_MAX_VALUE_BYTES)',
    params: StoreParams,
    body: StateCreateBody,
    response: StateEntry,
    status: 201,
    errors: [403, 404, 409, 413, 422],
  }),
  get: defineRoute({ ...rpc, id: 'states.get', method: 'GET', path: `${base}/{key}`, summary: 'One entry (expired or invisible entries answer 404)', params: StateParams, response: StateEntry, errors: [403, 404] }),
  put: defineRoute({
    ...rpc,
    id: 'states.put',
    method: 'PUT',
    path: `${base}/{key}`,
    summary: 'Change the fields given; creates the key (201) when absent, then `value` is required',
    params: StateParams,
    body: StatePutBody,
    response: StateEntry,
    errors: [403, 404, 409, 413, 422],
  }),
  delete: defineRoute({ ...rpc, id: 'states.delete', method: 'DELETE', path: `${base}/{key}`, summary: 'Delete an entry', params: StateParams, status: 204, errors: [403, 404] }),
}

export const stateRoutes = (): RouteDef[] => Object.values(STATE_ROUTES)
