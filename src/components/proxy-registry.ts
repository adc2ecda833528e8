import type { RouteReply } from '../api/bind.ts'
import type { ServiceContext } from '../api/feature.ts'
import type { Principal } from '../auth/principal.ts'
import type { ComponentSpec } from '../../schemas/component.ts'
import type { ResourceRecord } from '../resources/service.ts'
import type { ProxyArea, ProxyTarget } from './proxy-areas.ts'

/*
 * Who runs a proxy call of each area. The feature owning the target kind registers a factory once
 * (module level), e.g. in src/queries/module.ts:
 *
 *   registerComponentProxy('queries', (ctx) => (call) => runQueryAs(ctx, call.principal, call.target, call.body))
 *
 * The components feature builds the executors with its ServiceContext when the service starts.
 * By the time an executor runs, the component was found, the caller may view it and the target is
 * in its enabled list (handlers.ts); the executor still checks the principal's own permission on
 * the target (404 when missing) — the proxy never widens what the principal may do.
 */
export interface ProxyCall {
  /** Who the call runs as: the viewer (render page, bearer proxy) or the owner (share page). */
  principal: Principal
  component: ResourceRecord<ComponentSpec> & { namespace: string }
  target: ProxyTarget
  /** The validated body, without the page's ticket. */
  body: Record<string, unknown>
  via: 'bearer' | 'page' | 'share'
  /** A key unique to the component and the view, for scoping per-view state (agent session keys). */
  scope: string
}

export type ProxyExecutor = (call: ProxyCall) => Promise<RouteReply>
export type ProxyExecutorFactory = (ctx: ServiceContext) => ProxyExecutor

const factories = new Map<ProxyArea, ProxyExecutorFactory>()

export function registerComponentProxy(area: ProxyArea, make: ProxyExecutorFactory): void {
  factories.set(area, make)
}

export function proxyExecutors(ctx: ServiceContext): Map<ProxyArea, ProxyExecutor> {
  return new Map([...factories].map(([area, make]) => [area, make(ctx)]))
}
