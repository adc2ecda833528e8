import { AppError } from '../kernel/errors.ts'
import { refMatches } from '../components/proxy-areas.ts'
import type { ProxyExecutorFactory } from '../feature/component-proxy.ts'
import { createStateService } from './service.ts'

/*
 * The components' state proxy (`/proxy/states/{ns}`): list, get, set and delete in a store of the
 * component's `enabled_stores`, as the acting principal, through the one state service — so the
 * store's permissions, visibility and schema apply exactly as on the direct routes, and the
 * entry's `readonly` access refuses writes (the proxy's list check refused them already; the
 * service checks again).
 */
export const stateProxy: ProxyExecutorFactory = (ctx) => {
  const states = createStateService({
    db: ctx.db,
    config: ctx.config,
    resources: ctx.resources,
    nats: { nc: ctx.nc, names: ctx.names },
  })
  return async ({ principal: p, target, body, component }) => {
    const store = { namespace: target.namespace, name: target.name }
    const entry = component.enabled_stores.find((e) => refMatches(e.store, target))
    const through = { access: entry?.access ?? 'readonly' }
    const key = typeof body['key'] === 'string' ? body['key'] : undefined
    const needKey = (): string => {
      if (key === undefined)
        throw new AppError(422, 'request.invalid', `action ${String(body['action'])} needs a key`, {
          issues: [{ path: 'key', message: 'required for get, set and delete' }],
        })
      return key
    }
    switch (body['action']) {
      case 'list':
        return { body: (await states.list(p, store)).items }
      case 'get':
        return { body: await states.get(p, store, needKey()) }
      case 'set':
        return { body: (await states.put(p, store, needKey(), { value: body['value'] }, through)).entry }
      default:
        await states.remove(p, store, needKey(), through)
        return { status: 204 }
    }
  }
}
