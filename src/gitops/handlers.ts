import { bind, type BoundRoute } from '../api/bind.ts'
import { can, type Principal } from '../auth/principal.ts'
import type { ServiceContext } from '../feature/define.ts'
import { permissionSet } from '../feature/permissions.ts'
import { AppError, forbidden } from '../kernel/errors.ts'
import type { Applier } from './apply.ts'
import { documentLimits } from './document-limits.ts'
import { configYaml } from './export-config.ts'
import { readConfig, UNREADABLE } from './read-config.ts'
import { CONFIG_ROUTES as R } from './routes.ts'

/** The permissions the config routes check (admin grants), for the reference. */
export const configPermissions = permissionSet()
const APPLY = configPermissions.add('platform.config.apply:all', 'validate and apply declarative config (admin)')
const READ = configPermissions.add('platform.config.read:all', 'export the platform as a config document (admin)')

/** Who applies through these routes: what they create is managed by `config`. */
export const CONFIG_OWNER = 'config'

/*
 * `/api/v1/config/*`. The split between an error reply and `{valid: false}`: a text that cannot
 * be read as a document at all (YAML syntax, CONFIG_MAX_BYTES, depth, aliases) is refused with its
 * error code and the line and column (4xx); a document that reads but has problems (unknown keys,
 * shape, a missing `${VAR}`, an invalid resource, a dangling reference) is a validation's answer:
 * 200 `{valid: false, errors}` from validate, 422 from apply.
 */
export function configHandlers(ctx: ServiceContext, applier: Applier): BoundRoute[] {
  const limits = documentLimits(ctx.config)
  const need = (p: Principal, perm: string) => {
    if (!can(p, perm)) throw forbidden(`requires ${perm}`, 'auth.admin_only')
  }
  const read = async (p: Principal, text: string, validate: boolean) => {
    const out = await readConfig(text, process.env, { limits, applier, db: ctx.db, principal: p, validate })
    const { check } = out
    if (!check.valid && check.code !== undefined && UNREADABLE.has(check.code))
      throw AppError.of(check.code, check.errors[0]?.message, { issues: check.errors })
    return out
  }
  return [
    bind(R.validate, async ({ principal: p, body }) => {
      need(p, APPLY)
      const { check } = await read(p, body.config, true)
      return {
        body: {
          valid: check.valid,
          errors: check.errors,
          warnings: check.warnings,
          ...(check.code === undefined ? {} : { code: check.code }),
        },
      }
    }),

    bind(R.apply, async ({ principal: p, body }) => {
      need(p, APPLY)
      const { check, doc } = await read(p, body.config, false)
      if (!check.valid)
        throw AppError.of(check.code ?? 'config.invalid_document', check.errors[0]?.message, { issues: check.errors })
      const result = await applier.apply(p, {
        resources: check.resources,
        managedBy: CONFIG_OWNER,
        dryRun: body.dryRun === true,
        force: body.force === true,
        prune: false,
      })
      if (result.success) return { body: result }
      // the applier's paths are the document's: placed on their lines
      const errors = result.errors.map((e) => (doc === undefined ? e : doc.issueAt(e.path, e.message)))
      return { status: 422, body: { ...result, errors } }
    }),

    bind(R.export, async ({ principal: p }) => {
      need(p, READ)
      const text = configYaml(await applier.current(), `exported ${new Date().toISOString()}`)
      return { body: text, headers: { 'content-disposition': 'inline; filename="platform-config.yaml"' } }
    }),
  ]
}
