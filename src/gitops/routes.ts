import { defineRoute, type RouteDef } from '../api/route.ts'
import { ApplyResultSchema, ConfigApplyBody, ConfigValidateBody, ConfigValidateResult } from './config-wire.ts'

/* Declarative config (docs/gitops.md): validate, apply and export a PlatformConfig document. Admin only. */

const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['Config']

export const CONFIG_ROUTES = {
  validate: defineRoute({
    ...m,
    tags,
    id: 'config.validate',
    method: 'POST',
    path: '/api/v1/config/validate',
    summary:
      'Check a config document without applying it: YAML, envelope, `${VAR}` interpolation, each resource against its kind, references. A document that cannot be read (YAML syntax, size, depth, aliases) answers 4xx with line and column; one that can be read answers 200 `{valid, errors, warnings}`',
    body: ConfigValidateBody,
    bodyLimit: 'document',
    response: ConfigValidateResult,
    errors: [403, 413, 422],
    permission: 'platform.config.apply:all',
  }),
  apply: defineRoute({
    ...m,
    tags,
    id: 'config.apply',
    method: 'POST',
    path: '/api/v1/config/apply',
    summary:
      'Apply a config document in one transaction (all or nothing), resources managed by `config`; unchanged ones skipped by checksum, ones created through the API left alone with a warning unless `force`. `dryRun` answers the plan. A refused apply answers 422 with the same shape, `success: false`',
    body: ConfigApplyBody,
    bodyLimit: 'document',
    response: ApplyResultSchema,
    errors: [403, 413, 422],
    permission: 'platform.config.apply:all',
  }),
  export: defineRoute({
    ...m,
    tags,
    id: 'config.export',
    method: 'GET',
    path: '/api/v1/config/export',
    summary:
      'The platform as a config document (YAML, `application/yaml`): every section, fields equal to their defaults left out, secret values never (secrets by name only)',
    html: true,
    contentType: 'application/yaml; charset=utf-8',
    permission: 'platform.config.read:all',
  }),
} satisfies Record<string, RouteDef>

export const configRoutes = (): RouteDef[] => Object.values(CONFIG_ROUTES)
