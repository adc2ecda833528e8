import type { ComponentSpec } from '../../schemas/component.ts'
import type { RouteReply } from '../api/bind.ts'
import type { Principal } from '../auth/principal.ts'
import type { ResourceRecord } from '../resources/service.ts'
import type { ServiceContext } from './define.ts'

/*
 * Who runs a component's proxy call of each area. The feature owning the target kind contributes
 * a factory as `componentProxies` of its Feature object, e.g. the data feature:
 *
 *   componentProxies: { queries: (ctx) => (call) => runQueryAs(ctx, call.principal, call.target, call.body) }
 *
 * The service role collects them from the feature list; the components feature builds the
 * executors with its ServiceContext when the service starts. By the time an executor runs, the
 * component was found, the caller may view it and the target is in its enabled list
 * (src/components/handlers.ts); the executor still checks the principal's own permission on the
 * target (404 when missing): the proxy never widens what the principal may do.
 */
export type ProxyArea = 'functions' | 'agents' | 'queries' | 'states'

export interface ProxyTarget {
  namespace: string
  name: string
}

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
export type ComponentProxies = Partial<Record<ProxyArea, ProxyExecutorFactory>>
