import type { Static } from '@sinclair/typebox'
import type { TemplateSpec } from '../../schemas/template.ts'
import { permissionSet } from '../feature/permissions.ts'
import { bind, type BoundRoute } from '../api/bind.ts'
import type { Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import { AppError, notFound } from '../kernel/errors.ts'
import { templateKind } from '../kinds/template/kind.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import type { TemplateMailer } from './mail.ts'
import { renderTemplateResource } from './render.ts'
import { TEMPLATE_ROUTES as R } from './routes.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const templatePermissions = permissionSet()

/*
 * Render needs its own action, `platform.templates/<ns>/<name>.render:own|all` (without `read`: a
 * role may let someone fill a template in without showing its source or letting them change it);
 * send needs `…send:own|all` and read, checked at execution time, because an email leaves the
 * platform. The default Users role holds both for its own templates.
 */
export const TEMPLATE_SEND_PERMISSIONS = [
  templatePermissions.add('platform.templates/{namespace}/{name}.send:own', 'Template: send own templates as email'),
  templatePermissions.add('platform.templates/{namespace}/{name}.send:all', 'Template: send any template as email'),
]
export const TEMPLATE_RENDER_PERMISSIONS = [
  templatePermissions.add('platform.templates/{namespace}/{name}.render:own', 'Template: render own templates'),
  templatePermissions.add('platform.templates/{namespace}/{name}.render:all', 'Template: render any template'),
]

type TemplateRecord = ResourceRecord<Static<typeof TemplateSpec>>

export function templateHandlers(d: {
  resources: ResourceService
  config: Config
  mailer: TemplateMailer
}): BoundRoute[] {
  const { resources, config, mailer } = d
  const load = (p: Principal, id: string): Promise<TemplateRecord> => resources.get(p, templateKind, { id })

  // an inactive template is kept but not used (like an inactive function)
  const usable = async (p: Principal, id: string): Promise<TemplateRecord> => {
    const t = await load(p, id)
    if (!t.is_active) throw notFound(`template ${id} is inactive`)
    return t
  }
  /** 404 when the caller may neither read nor render it (nothing leaks), 403 when it sees it but may not render. */
  const render = async (p: Principal, id: string, variables: Record<string, unknown> | undefined) => {
    // the platform's own read (no `read` check): `render` is the check
    const t = (await resources.byId(templateKind, id).catch(() => null)) as TemplateRecord | null
    const meta = t === null ? null : { namespace: t.namespace ?? 'default', name: t.name, ownerId: t.owner_id ?? null }
    const may = meta !== null && canOnResource(p, templateKind, 'render', meta)
    if (t === null || meta === null || (!may && !canOnResource(p, templateKind, 'read', meta)))
      throw notFound(`template ${id} not found`)
    if (!may)
      throw new AppError(403, 'auth.forbidden', `requires platform.templates/${meta.namespace}/${meta.name}.render`)
    if (!t.is_active) throw notFound(`template ${id} is inactive`)
    return renderTemplateResource(t, variables ?? {})
  }

  const send = async (
    p: Principal,
    id: string,
    body: { to: string | string[]; variables?: Record<string, unknown>; from_name?: string },
  ) => {
    const t = await usable(p, id)
    const meta = { namespace: t.namespace ?? 'default', name: t.name, ownerId: t.owner_id ?? null }
    // the caller can read it (else 404 above): a missing send grant is a plain 403
    if (!canOnResource(p, templateKind, 'send', meta))
      throw new AppError(403, 'auth.forbidden', `requires platform.templates/${meta.namespace}/${meta.name}.send`)
    // distinct addresses, compared case-insensitively, first spelling kept
    const seen = new Map<string, string>()
    for (const a of Array.isArray(body.to) ? body.to : [body.to])
      if (!seen.has(a.toLowerCase())) seen.set(a.toLowerCase(), a)
    const to = [...seen.values()]
    if (to.length > config.TEMPLATE_EMAIL_MAX_RECIPIENTS) {
      throw new AppError(
        422,
        'email.too_many_recipients',
        `${String(to.length)} recipients; at most ${String(config.TEMPLATE_EMAIL_MAX_RECIPIENTS)} (TEMPLATE_EMAIL_MAX_RECIPIENTS)`,
        {
          issues: [
            { path: '/to', message: `at most ${String(config.TEMPLATE_EMAIL_MAX_RECIPIENTS)} distinct addresses` },
          ],
        },
      )
    }
    // rendered before anything is sent: a missing variable or schema failure sends nothing
    const rendered = renderTemplateResource(t, body.variables ?? {})
    return mailer.send({ to, fromName: body.from_name, fallbackSubject: `${meta.namespace}/${t.name}`, rendered })
  }

  return [
    bind(R.getById, async ({ principal, params }) => ({ body: await load(principal, params.id) })),
    bind(R.getByName, async ({ principal, params }) => ({
      body: await resources.get(principal, templateKind, { namespace: params.namespace, name: params.name }),
    })),
    bind(R.patchById, async ({ principal, params, body }) => ({
      body: await resources.update(principal, templateKind, { id: params.id }, body, { managedBy: null }),
    })),
    bind(R.deleteById, async ({ principal, params }) => {
      await resources.remove(principal, templateKind, { id: params.id })
      return { status: 204 }
    }),
    bind(R.render, async ({ principal, params, body }) => ({
      body: await render(principal, params.id, body.variables),
    })),
    bind(R.renderV1, async ({ principal, params, body }) => ({
      body: await render(principal, params.id, body.variables),
    })),
    bind(R.send, async ({ principal, params, body }) => ({ body: await send(principal, params.id, body) })),
    bind(R.sendV1, async ({ principal, params, body }) => ({ body: await send(principal, params.id, body) })),
  ]
}
