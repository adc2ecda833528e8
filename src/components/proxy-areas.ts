import type { TObject, TSchema } from '@sinclair/typebox'
import { ExecuteResult } from '../../schemas/functions-api.ts'
import { InvokeAnswer } from '../../schemas/chat.ts'
import {
  ProxyAgentBody,
  ProxyFunctionBody,
  ProxyQueryBody,
  ProxyStateBody,
  type ComponentSpec,
} from '../../schemas/component.ts'
import type { ProxyArea, ProxyTarget } from '../feature/component-proxy.ts'

/*
 * The proxy areas of a component, as data: the route paths of both proxy families (routes.ts),
 * the body of each, and the rule that decides whether a target is in the component's enabled
 * list. No I/O (the gateway imports the routes). What runs a call is contributed per area by the
 * feature that owns the target kind (`componentProxies` of its Feature, src/feature/component-proxy.ts);
 * an area nobody contributes answers 501.
 */
export interface ProxyAreaDef {
  /** The resource kind a target is (`function`, `agent`, `query`, `store`). */
  kind: string
  /** The enabled list of the component that governs the area. */
  field: keyof ComponentSpec & `enabled_${string}`
  /** Path below `/proxy` (bearer) or `/components/view` (page), `{target_namespace}` etc. as route params. */
  path: string
  body: TObject
  response?: TSchema
  summary: string
  /** The target of a call from its path params and body. */
  target(params: Record<string, string>, body: Record<string, unknown>): ProxyTarget
  /** Whether the enabled list admits this call on this target. */
  allows(spec: ComponentSpec, target: ProxyTarget, body: Record<string, unknown>): boolean
}

/** `ns/name`, `ns/*` or `*\/*` (RefPattern) against a target. */
export function refMatches(pattern: string, t: ProxyTarget): boolean {
  const [ns, name] = pattern.split('/')
  return (ns === '*' || ns === t.namespace) && (name === '*' || name === t.name)
}

const named = (params: Record<string, string>): ProxyTarget => ({
  namespace: params['target_namespace'] ?? '',
  name: params['target_name'] ?? '',
})
const inList =
  (field: 'enabled_functions' | 'enabled_agents' | 'enabled_queries') => (spec: ComponentSpec, t: ProxyTarget) =>
    spec[field].some((p) => refMatches(p, t))

export const PROXY_AREAS: Record<ProxyArea, ProxyAreaDef> = {
  functions: {
    kind: 'function',
    field: 'enabled_functions',
    path: 'functions/{target_namespace}/{target_name}/execute',
    body: ProxyFunctionBody,
    response: ExecuteResult,
    summary: 'Run a function of the enabled_functions list (answer as POST /functions/{ns}/{name}/execute)',
    target: named,
    allows: inList('enabled_functions'),
  },
  agents: {
    kind: 'agent',
    field: 'enabled_agents',
    path: 'agents/{target_namespace}/{target_name}/invoke',
    body: ProxyAgentBody,
    response: InvokeAnswer,
    summary:
      'Send a message to an agent of the enabled_agents list (answer as POST /agents/{ns}/{name}/invoke; session keys are scoped to the component)',
    target: named,
    allows: inList('enabled_agents'),
  },
  queries: {
    kind: 'query',
    field: 'enabled_queries',
    path: 'queries/{target_namespace}/{target_name}/execute',
    body: ProxyQueryBody,
    summary: 'Run a query of the enabled_queries list (501 until the queries feature registers its executor)',
    target: named,
    allows: inList('enabled_queries'),
  },
  states: {
    kind: 'store',
    field: 'enabled_stores',
    path: 'states/{target_namespace}',
    body: ProxyStateBody,
    summary:
      'Read (list, get) or write (set, delete; readwrite stores only) a store of the enabled_stores list (501 until the stores feature registers its executor)',
    target: (params, body) => ({ namespace: params['target_namespace'] ?? '', name: String(body['store'] ?? '') }),
    allows: (spec, t, body) => {
      const write = body['action'] === 'set' || body['action'] === 'delete'
      return spec.enabled_stores.some((e) => refMatches(e.store, t) && (!write || e.access === 'readwrite'))
    },
  },
}
