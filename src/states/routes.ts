import { Type as T } from '@sinclair/typebox'
import {
  StateCreateBody,
  StateEntry,
  StateListQuery,
  StateParams,
  StatePutBody,
  StoreParams,
} from '../../schemas/store.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * State entries of a store, under the store's own path (`/stores/{ns}/{name}/states…`) and on the
 * runtime path group `/states/{ns}/{name}…`. The store itself is managed under /api/v1/stores (the `store` kind). Shapes live in
 * schemas/store.ts.
 */
const rpc = { auth: true as const, target: 'rpc' as const, surface: 'runtime' as const, tags: ['States'] }

/** The five routes of a store's entries under `base` (`…/{namespace}/{name}` of the store). */
function stateRoutesAt(base: string, id: (op: string) => string, note = '') {
  return {
    list: defineRoute({
      ...rpc,
      id: id('list'),
      method: 'GET',
      path: base,
      summary: `Entries of a store the caller may see, by key; \`search\` is a key prefix, \`tags\` must all match, \`owner\` a user id or \`me\` (total in X-Total-Count)${note}`,
      params: StoreParams,
      query: StateListQuery,
      response: T.Array(StateEntry),
      errors: [403, 404],
    }),
    create: defineRoute({
      ...rpc,
      id: id('create'),
      method: 'POST',
      path: base,
      summary: `Create an entry (409 \`state.exists\` when the key is in use; 422 \`state.invalid_value\` against a strict store schema; 413 \`state.too_large\` beyond STATE_MAX_VALUE_BYTES)${note}`,
      params: StoreParams,
      body: StateCreateBody,
      response: StateEntry,
      status: 201,
      errors: [403, 404, 409, 413, 422],
    }),
    get: defineRoute({
      ...rpc,
      id: id('get'),
      method: 'GET',
      path: `${base}/{key}`,
      summary: `One entry (expired or invisible entries answer 404)${note}`,
      params: StateParams,
      response: StateEntry,
      errors: [403, 404],
    }),
    put: defineRoute({
      ...rpc,
      id: id('put'),
      method: 'PUT',
      path: `${base}/{key}`,
      summary: `Change the fields given; creates the key (201) when absent, then \`value\` is required${note}`,
      params: StateParams,
      body: StatePutBody,
      response: StateEntry,
      errors: [403, 404, 409, 413, 422],
    }),
    delete: defineRoute({
      ...rpc,
      id: id('delete'),
      method: 'DELETE',
      path: `${base}/{key}`,
      summary: `Delete an entry${note}`,
      params: StateParams,
      status: 204,
      errors: [403, 404],
    }),
  }
}

export const STATE_ROUTES = stateRoutesAt('/stores/{namespace}/{name}/states', (op) => `states.${op}`)

/**
 * The same entries on the runtime path group `/states`: `/states/{namespace}/{name}` is the store
 * `{namespace}/{name}` (list, create), `/states/{namespace}/{name}/{key}` one entry (get, put,
 * delete). Same handlers, same permissions and answers as the `/stores/…/states` paths.
 */
export const STATE_GROUP_ROUTES = stateRoutesAt(
  '/states/{namespace}/{name}',
  (op) => `states.group.${op}`,
  ' (the same as under /stores/{namespace}/{name}/states)',
)

export const stateRoutes = (): RouteDef[] => [...Object.values(STATE_ROUTES), ...Object.values(STATE_GROUP_ROUTES)]
