import type { ComponentSpec } from '../../schemas/component.ts'
import { bind, type BoundRoute, type RouteReply } from '../api/bind.ts'
import type { ServiceContext } from '../feature/define.ts'
import { intersectGrants, loadPrincipal, type Principal } from '../auth/principal.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { AppError, forbidden, invalid, notFound } from '../kernel/errors.ts'
import { componentKind } from '../kinds/component/kind.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceRecord } from '../resources/service.ts'
import { compileComponent, sourceSha256 } from './compile.ts'
import { renderPage } from './page.ts'
import { PROXY_AREAS, refMatches } from './proxy-areas.ts'
import type { ProxyArea, ProxyCall, ProxyExecutor } from '../feature/component-proxy.ts'
import { COMPONENT_ROUTES as R, PAGE_PROXY_ROUTES, PROXY_AREA_NAMES, PROXY_ROUTES } from './routes.ts'
import { componentStore, type ShareRecord, type TicketRecord } from './store.ts'

/*
 * Compile, share links, the pages and the proxies. Who may do what:
 * - view (render, bearer proxies): whoever may read the component, and every signed-in user for a
 *   public one; anyone else gets 404. Proxy calls run as the viewer, and only on targets in the
 *   component's enabled lists (403 `component.proxy_not_enabled` otherwise).
 * - compile and share links: whoever may update the component (its owner, admins).
 * - a share page: no account; it renders only while the component is `shared` or `public` and
 *   active, and its proxy calls run as the component's owner, within the enabled lists.
 */
type Component = ResourceRecord<ComponentSpec> & { namespace: string }

/**
 * How deep embedded components may nest (a page embedding a page embedding …): a component that
 * enables itself, or two that enable each other, would otherwise nest frames without end.
 */
export const MAX_EMBED_DEPTH = 4

/** Compiled bundles kept in memory per process (typically tens of KB each). */
const BUNDLE_CACHE_ENTRIES = 256

export function componentHandlers(ctx: ServiceContext): BoundRoute[] {
  const { db, config, resources } = ctx
  const store = componentStore(db, config.SECRET_KEY)
  const executors = new Map<ProxyArea, ProxyExecutor>(
    Object.entries(ctx.componentProxies).map(([area, make]) => [area as ProxyArea, make(ctx)]),
  )
  const log = ctx.log.child({ mod: 'components' })

  const meta = (c: Component) => ({ namespace: c.namespace, name: c.name, ownerId: c.owner_id ?? null })
  const mayView = (p: Principal, c: Component): boolean =>
    c.is_active !== false && (c.visibility === 'public' || canOnResource(p, componentKind, 'read', meta(c)))

  /** The component at ns/name if `p` may view it (404 otherwise, like a missing one). */
  const viewable = async (p: Principal, namespace: string, name: string): Promise<Component> => {
    const [c] = await resources.loadMany(componentKind, [`${namespace}/${name}`])
    if (c === undefined || !mayView(p, { ...c, namespace })) throw notFound(`component ${namespace}/${name} not found`)
    return { ...c, namespace }
  }

  /** The component if `p` may change it: 404 when it may not even read it, 403 when it may only read it. */
  const changeable = async (p: Principal, namespace: string, name: string): Promise<Component> => {
    const c = { ...(await resources.get(p, componentKind, { namespace, name })), namespace }
    if (!canOnResource(p, componentKind, 'update', meta(c)))
      throw forbidden(`not allowed to change component ${namespace}/${name}`)
    return c
  }

  /**
   * Bundles this process served, by component id with the source they were built from: a render
   * of an unchanged component needs no query (the bundle is a pure function of the source, so an
   * entry is right for as long as the source is the same; another process's compile of a new
   * source shows up as a different source here). Bounded: the oldest entry goes first.
   */
  const served = new Map<string, { source: string; bundle: string }>()
  const remember = (id: string, source: string, bundle: string): string => {
    served.delete(id)
    served.set(id, { source, bundle })
    if (served.size > BUNDLE_CACHE_ENTRIES) served.delete(served.keys().next().value as string)
    return bundle
  }

  /** The current bundle: the stored one while the source is unchanged, else compiled now and stored. */
  const bundleOf = async (c: Component): Promise<string> => {
    const hit = served.get(c.id)
    if (hit !== undefined && hit.source === c.source_code) return hit.bundle
    const stored = await store.bundle(c.id)
    if (stored !== null && stored.source_sha256 === sourceSha256(c.source_code))
      return remember(c.id, c.source_code, stored.bundle)
    return remember(
      c.id,
      c.source_code,
      (await store.saveBundle(c.id, await compileComponent(c.source_code, config.COMPONENT_MAX_BUNDLE_BYTES))).bundle,
    )
  }

  const shareUrl = (token: string) =>
    `${config.DOMAIN === '' ? '' : `https://${config.DOMAIN}`}/components/shared/${token}`
  const publicShare = (s: ShareRecord) => ({
    token: s.token,
    url: shareUrl(s.token),
    expires_at: s.expires_at,
    max_views: s.max_views,
    views: s.views,
    created_at: s.created_at,
  })

  const page = (
    c: Component,
    o: {
      ticket: string | null
      mode: 'user' | 'share'
      input: Record<string, unknown>
      bundle: string
      embedded?: boolean
    },
  ): RouteReply => {
    const out = renderPage(config, {
      title: c.title === '' ? `${c.namespace}/${c.name}` : c.title,
      bundle: o.bundle,
      css: c.css_overrides,
      component: { namespace: c.namespace, name: c.name, title: c.title },
      input: o.input,
      ticket: o.ticket,
      mode: o.mode,
      embedded: o.embedded === true,
    })
    return { body: out.html, headers: out.headers }
  }

  /** The common proxy path: enabled-list check, then the area's executor. */
  const runProxy = async (
    area: ProxyArea,
    call: Omit<ProxyCall, 'target'>,
    params: Record<string, string>,
  ): Promise<RouteReply> => {
    const a = PROXY_AREAS[area]
    const target = a.target(params, call.body)
    if (!a.allows(call.component, target, call.body)) {
      throw new AppError(
        403,
        'component.proxy_not_enabled',
        `${a.kind} ${target.namespace}/${target.name} is not in ${a.field} of component ${call.component.namespace}/${call.component.name}${area === 'states' ? ' (or the store is readonly there)' : ''}`,
      )
    }
    const exec = executors.get(area)
    if (exec === undefined)
      throw new AppError(501, 'component.proxy_unavailable', `the ${area} proxy is not available on this platform yet`)
    return exec({ ...call, target })
  }

  /** Who a page's ticket runs as; 401 for an unknown or expired ticket or a share link gone. */
  const pageCaller = async (
    ticket: string,
  ): Promise<{
    principal: Principal
    component: Component
    via: 'page' | 'share'
    scope: string
    ticket: TicketRecord
  }> => {
    const t = await store.ticket(ticket)
    if (t === null || !t.share_live)
      throw new AppError(401, 'component.ticket_invalid', 'the view ticket is unknown or has expired; reload the page')
    const c = await resources.byId(componentKind, t.component_id)
    if (c === null) throw new AppError(401, 'component.ticket_invalid', 'the component of this page no longer exists')
    const component: Component = { ...c, namespace: String(c.namespace) }
    if (t.acting_user_id === null)
      throw forbidden('this page has nobody to run its calls as (the component has no owner)')
    const live = await loadPrincipal(db, { sub: t.acting_user_id, via: 'jwt' }).catch(() => {
      throw new AppError(401, 'component.ticket_invalid', 'the user this page runs as is no longer active')
    })
    const principal: Principal =
      t.permissions === null ? live : { ...live, permissions: intersectGrants(t.permissions, live.permissions) }
    if (t.share_id !== null) {
      if (component.is_active === false || component.visibility === 'private')
        throw new AppError(401, 'component.ticket_invalid', 'the component is no longer shared')
      return { principal, component, via: 'share', scope: `share:${t.hash.slice(0, 16)}`, ticket: t }
    }
    if (!mayView(principal, component))
      throw new AppError(401, 'component.ticket_invalid', 'the viewer may no longer view this component')
    return { principal, component, via: 'page', scope: 'page', ticket: t }
  }

  const parseInput = (c: Component, raw: string | undefined): Record<string, unknown> => {
    if (raw === undefined || raw === '') return {}
    let input: unknown
    try {
      input = JSON.parse(raw)
    } catch {
      throw invalid(
        'input is not valid JSON',
        [{ path: 'input', message: 'expected a JSON object' }],
        'component.input_invalid',
      )
    }
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      throw invalid(
        'input must be a JSON object',
        [{ path: 'input', message: 'expected a JSON object' }],
        'component.input_invalid',
      )
    const issues = validateAgainst(c.input_schema, input, '/input')
    if (issues.length > 0)
      throw invalid("input does not match the component's input_schema", issues, 'component.input_invalid')
    return input as Record<string, unknown>
  }

  const routes: BoundRoute[] = [
    bind(R.compile, async ({ principal: p, params }) => {
      const c = await changeable(p, params.namespace, params.name)
      const compiled = await compileComponent(c.source_code, config.COMPONENT_MAX_BUNDLE_BYTES)
      const row = await store.saveBundle(c.id, compiled)
      remember(c.id, c.source_code, row.bundle)
      log.info(
        { component: `${c.namespace}/${c.name}`, bytes: Buffer.byteLength(row.bundle), by: p.userId },
        'component compiled',
      )
      return {
        body: {
          namespace: c.namespace,
          name: c.name,
          compiled_bundle: row.bundle,
          bundle_bytes: Buffer.byteLength(row.bundle),
          source_sha256: row.source_sha256,
          compiled_at: row.compiled_at,
          warnings: row.warnings,
        },
      }
    }),
    bind(R.sharesCreate, async ({ principal: p, params, body }) => {
      const c = await changeable(p, params.namespace, params.name)
      if (c.visibility === 'private')
        throw new AppError(
          409,
          'component.not_shareable',
          `component ${c.namespace}/${c.name} is private: set visibility to shared or public to share it by link`,
        )
      const share = await store.createShare(c.id, p.userId, { expiresIn: body.expires_in, maxViews: body.max_views })
      log.info(
        {
          component: `${c.namespace}/${c.name}`,
          by: p.userId,
          max_views: share.max_views,
          expires_at: share.expires_at,
        },
        'component share link created',
      )
      return { status: 201, body: publicShare(share) }
    }),
    bind(R.sharesList, async ({ principal: p, params }) => {
      const c = await changeable(p, params.namespace, params.name)
      return { body: (await store.shares(c.id)).map(publicShare) }
    }),
    bind(R.sharesDelete, async ({ principal: p, params }) => {
      const c = await changeable(p, params.namespace, params.name)
      if (!(await store.deleteShare(c.id, params.token)))
        throw notFound('share link not found', 'component.share_not_found')
      return { status: 204 }
    }),
    bind(R.list, async ({ principal: p, query }) => {
      const namespaces = new Set(query.namespace?.split(',').filter(Boolean) ?? [])
      const visible = (await resources.all(componentKind)).filter(
        (r) =>
          r.is_active === true &&
          (namespaces.size === 0 || namespaces.has(r.namespace ?? '')) &&
          (r.visibility === 'public' ||
            canOnResource(p, componentKind, 'read', {
              namespace: r.namespace ?? '',
              name: r.name,
              ownerId: r.owner_id ?? null,
            })),
      )
      const offset = query.offset ?? 0
      return {
        body: visible.slice(offset, offset + (query.limit ?? 100)).map((r) => ({
          namespace: r.namespace ?? '',
          name: r.name,
          title: r.title,
          description: r.description,
          visibility: r.visibility,
          owner_id: r.owner_id ?? null,
          render_url: `/components/${r.namespace}/${r.name}/render`,
        })),
        headers: { 'x-total-count': String(visible.length) },
      }
    }),
    bind(R.render, async ({ principal: p, params, query }) => {
      const c = await viewable(p, params.namespace, params.name)
      const input = parseInput(c, query.input)
      const bundle = await bundleOf(c)
      // an execution token's page gets no ticket: its powers end with the execution, a ticket's would not
      const ticket =
        p.executionId !== undefined
          ? null
          : store.mintTicket({
              componentId: c.id,
              actingUserId: p.userId,
              shareId: null,
              permissions: p.apiKeyId === undefined ? null : p.permissions,
              ttlSeconds: config.COMPONENT_VIEW_TICKET_SECONDS,
            })
      return page(c, { ticket, mode: 'user', input, bundle })
    }),
    /*
     * An embedded component (enabled_components) in a nested frame of a rendered page. The rules
     * of the other enabled lists: the embedding page's ticket says who it runs as (401 when
     * unknown or expired), the target must be in its component's enabled_components (403) and
     * viewable by that principal now (404, as render), and on a share page it must itself be shared
     * or public (a private component is never shown by link). Its page gets its own ticket — same
     * user, same share link, same permission cap, ending no later than the embedding one — so its
     * proxy calls follow its own enabled lists, never the embedding component's.
     */
    bind(R.embed, async ({ params, query }) => {
      // an empty query string is not validated (src/api/rpc-server.ts): no ticket is an unknown one (401)
      const caller = await pageCaller(typeof query.ticket === 'string' ? query.ticket : '')
      const target = { namespace: params.target_namespace, name: params.target_name }
      if (!caller.component.enabled_components.some((pattern) => refMatches(pattern, target))) {
        throw new AppError(
          403,
          'component.proxy_not_enabled',
          `component ${target.namespace}/${target.name} is not in enabled_components of component ${caller.component.namespace}/${caller.component.name}`,
        )
      }
      if (caller.ticket.depth >= MAX_EMBED_DEPTH)
        throw new AppError(
          403,
          'component.proxy_not_enabled',
          `embedded components nest ${String(MAX_EMBED_DEPTH)} levels deep at most`,
        )
      const c = await viewable(caller.principal, target.namespace, target.name)
      if (caller.via === 'share' && c.visibility === 'private')
        throw notFound(`component ${target.namespace}/${target.name} not found`)
      const input = parseInput(c, query.input)
      const bundle = await bundleOf(c)
      const t = caller.ticket
      const ticket = store.mintTicket({
        componentId: c.id,
        actingUserId: t.acting_user_id,
        shareId: t.share_id,
        permissions: t.permissions,
        ttlSeconds: config.COMPONENT_VIEW_TICKET_SECONDS,
        notAfterMs: t.expires_ms,
        depth: t.depth + 1,
      })
      return page(c, { ticket, mode: caller.via === 'share' ? 'share' : 'user', input, bundle, embedded: true })
    }),
    bind(R.shared, async ({ params }) => {
      const view = await store.countView(params.token)
      if (!view.ok) {
        if (view.reason === 'expired') throw new AppError(410, 'component.share_expired', 'the share link has expired')
        if (view.reason === 'exhausted')
          throw new AppError(410, 'component.share_exhausted', 'the share link has reached its view limit')
        throw notFound('share link not found', 'component.share_not_found')
      }
      const c = await resources.byId(componentKind, view.componentId)
      if (c === null) throw notFound('share link not found', 'component.share_not_found')
      const component: Component = { ...c, namespace: String(c.namespace) }
      const bundle = await bundleOf(component)
      const ticket = store.mintTicket({
        componentId: c.id,
        actingUserId: view.ownerId,
        shareId: view.shareId,
        permissions: null,
        ttlSeconds: config.COMPONENT_VIEW_TICKET_SECONDS,
      })
      return page(component, { ticket, mode: 'share', input: {}, bundle })
    }),
  ]

  for (const area of PROXY_AREA_NAMES) {
    routes.push(
      bind(PROXY_ROUTES[area], async ({ principal: p, params, body }) => {
        const c = await viewable(p, params.namespace, params.name)
        return runProxy(
          area,
          { principal: p, component: c, body: body as Record<string, unknown>, via: 'bearer', scope: 'api' },
          params,
        )
      }),
      bind(PAGE_PROXY_ROUTES[area], async ({ params, body }) => {
        const { ticket, ...rest } = body as Record<string, unknown> & { ticket: string }
        const { ticket: _ticket, ...caller } = await pageCaller(ticket)
        return runProxy(area, { ...caller, body: rest }, params)
      }),
    )
  }
  return routes
}
