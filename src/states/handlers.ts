import { bind, JsonBytes, type BoundRoute } from '../api/bind.ts'
import { STATE_GROUP_ROUTES, STATE_ROUTES } from './routes.ts'
import type { StateService } from './service.ts'

/* The state routes over the state service (every check lives there); both path groups alike. */
export function stateHandlers(states: StateService): BoundRoute[] {
  return [...handlersOf(STATE_ROUTES, states), ...handlersOf(STATE_GROUP_ROUTES, states)]
}

function handlersOf(R: typeof STATE_ROUTES, states: StateService): BoundRoute[] {
  const store = (params: { namespace: string; name: string }) => ({ namespace: params.namespace, name: params.name })
  return [
    bind(R.list, async ({ principal, params, query }) => {
      const { items, total } = await states.list(principal, store(params), query)
      return { body: items, headers: { 'x-total-count': String(total) } }
    }),
    bind(R.create, async ({ principal, params, body }) => ({
      status: 201,
      body: await states.create(principal, store(params), body),
    })),
    // the entry's JSON as rendered once per cached row (StateService.getJson)
    bind(R.get, async ({ principal, params }) => ({
      body: new JsonBytes(await states.getJson(principal, store(params), params.key)),
    })),
    bind(R.put, async ({ principal, params, body }) => {
      const { entry, created } = await states.put(principal, store(params), params.key, body)
      return { status: created ? 201 : 200, body: entry }
    }),
    bind(R.delete, async ({ principal, params }) => {
      await states.remove(principal, store(params), params.key)
      return { status: 204 }
    }),
  ]
}
