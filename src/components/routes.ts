import { Type as T } from '@sinclair/typebox'
import { ListQuery } from '../../schemas/common.ts'
import {
  CompileResult,
  ComponentParams,
  EmbedQuery,
  PageProxyStateParams,
  PageProxyTargetParams,
  ProxyStateParams,
  ProxyTargetParams,
  RenderableComponent,
  RenderQuery,
  Share,
  ShareCreateBody,
  ShareParams,
  SharedPageParams,
  withTicket,
} from '../../schemas/component.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'
import { PROXY_AREAS } from './proxy-areas.ts'
import type { ProxyArea } from '../feature/component-proxy.ts'

/*
 * Component routes besides CRUD (which the resource engine gives every kind): compile, share
 * links, the runtime list, the two pages (render, shared) and the proxies. Two proxy families:
 * `/components/{ns}/{name}/proxy/...` for API callers with a bearer token, running as
 * the caller; `/components/view/...` for the rendered pages, authenticated by the page's view
 * ticket in the body (a page never holds a platform token).
 */
const m = { surface: 'management', auth: true, target: 'rpc' } as const
const rt = { surface: 'runtime', auth: true, target: 'rpc' } as const
const open = { surface: 'runtime', auth: false, target: 'rpc' } as const
const tags = ['Components']
const one = '/api/v1/components/{namespace}/{name}'

export const COMPONENT_ROUTES = {
  compile: defineRoute({
    ...m,
    tags,
    id: 'components.compile',
    method: 'POST',
    path: `${one}/compile`,
    summary: 'Compile source_code into compiled_bundle (esbuild); 422 `component.compile_failed` names line and column',
    params: ComponentParams,
    response: CompileResult,
    errors: [403, 404, 422],
  }),
  sharesCreate: defineRoute({
    ...m,
    tags,
    id: 'components.shares.create',
    method: 'POST',
    path: `${one}/shares`,
    summary: 'Create a share link (optional expiry and view limit); 409 for a private component',
    params: ComponentParams,
    body: ShareCreateBody,
    response: Share,
    status: 201,
    errors: [403, 404, 409],
  }),
  sharesList: defineRoute({
    ...m,
    tags,
    id: 'components.shares.list',
    method: 'GET',
    path: `${one}/shares`,
    summary: 'Share links of a component',
    params: ComponentParams,
    response: T.Array(Share),
    errors: [403, 404],
  }),
  sharesDelete: defineRoute({
    ...m,
    tags,
    id: 'components.shares.delete',
    method: 'DELETE',
    path: `${one}/shares/{token}`,
    summary: 'Revoke a share link',
    params: ShareParams,
    status: 204,
    errors: [403, 404],
  }),
  list: defineRoute({
    ...rt,
    tags,
    id: 'components.renderable',
    method: 'GET',
    path: '/components',
    summary: 'Components the caller may render: those it may read, and public ones',
    query: ListQuery,
    response: T.Array(RenderableComponent),
  }),
  render: defineRoute({
    ...rt,
    tags,
    id: 'components.render',
    method: 'GET',
    path: '/components/{namespace}/{name}/render',
    summary: 'The component as a full HTML page (strict CSP; proxies run as the viewer)',
    params: ComponentParams,
    query: RenderQuery,
    html: true,
    errors: [404, 422],
  }),
  embed: defineRoute({
    ...open,
    tags,
    id: 'components.view.embed',
    method: 'GET',
    path: '/components/view/embed/{target_namespace}/{target_name}',
    summary:
      "An embedded component's page, for a nested frame of a rendered page (`PlatformUI.Embed`): the target must be in the embedding page's enabled_components and viewable by whoever that page runs as; it gets its own view ticket, never more than the embedding page's",
    params: PageProxyTargetParams,
    query: EmbedQuery,
    html: true,
    errors: [401, 403, 404, 422],
  }),
  shared: defineRoute({
    ...open,
    tags,
    id: 'components.shared',
    method: 'GET',
    path: '/components/shared/{token}',
    summary: 'A shared component as a full HTML page, no account needed; counts a view (410 when expired or used up)',
    params: SharedPageParams,
    html: true,
    errors: [404, 410, 422],
  }),
}

const proxyRoute = (area: ProxyArea) => {
  const a = PROXY_AREAS[area]
  const params = a.path.includes('{target_name}') ? ProxyTargetParams : ProxyStateParams
  return defineRoute({
    ...rt,
    tags,
    id: `components.proxy.${area}`,
    method: 'POST',
    path: `/components/{namespace}/{name}/proxy/${a.path}`,
    summary: `${a.summary}; runs as the caller`,
    params,
    body: a.body,
    ...(a.response === undefined ? {} : { response: a.response }),
    errors: [403, 404, 501],
  })
}
const pageProxyRoute = (area: ProxyArea) => {
  const a = PROXY_AREAS[area]
  const params = a.path.includes('{target_name}') ? PageProxyTargetParams : PageProxyStateParams
  return defineRoute({
    ...open,
    tags,
    id: `components.view.${area}`,
    method: 'POST',
    path: `/components/view/${a.path}`,
    summary: `From a rendered page (its view ticket in the body): ${a.summary}`,
    params,
    body: withTicket(a.body),
    ...(a.response === undefined ? {} : { response: a.response }),
    errors: [401, 403, 404, 501],
  })
}

export const PROXY_AREA_NAMES = Object.keys(PROXY_AREAS) as ProxyArea[]
export const PROXY_ROUTES = Object.fromEntries(PROXY_AREA_NAMES.map((a) => [a, proxyRoute(a)])) as Record<
  ProxyArea,
  ReturnType<typeof proxyRoute>
>
export const PAGE_PROXY_ROUTES = Object.fromEntries(PROXY_AREA_NAMES.map((a) => [a, pageProxyRoute(a)])) as Record<
  ProxyArea,
  ReturnType<typeof pageProxyRoute>
>

export const componentRoutes = (): RouteDef[] => [
  ...Object.values(COMPONENT_ROUTES),
  ...Object.values(PROXY_ROUTES),
  ...Object.values(PAGE_PROXY_ROUTES),
]
