import type { Principal } from '../auth/principal.ts'
import type { FieldIssue } from '../kernel/errors.ts'
import type { Db } from '../platform/db.ts'
import type { Applier } from './apply.ts'
import { checkResources } from './check-resources.ts'
import { validateConfigDocument, type ConfigDocument } from './config-schema.ts'
import { failedCheck, type DocumentCheck } from './document-check.ts'
import type { DocumentLimits } from './document-limits.ts'
import { interpolateEnv } from './interpolate-env.ts'
import { parseYamlDocument, type ParsedDocument } from './parse-document.ts'
import { documentResources } from './document-resources.ts'

/** Codes of a document that could not be read at all: the routes answer them as errors (4xx), not as `{valid: false}`. */
export const UNREADABLE = new Set([
  'config.invalid_yaml',
  'config.too_large',
  'config.too_deep',
  'config.too_many_aliases',
])

/**
 * A config text read for the routes: parsed within the limits, its envelope checked, `${VAR}`
 * interpolated from `env`. With `validate`, every resource is also checked against its kind
 * (ConfigKind.validate, which may be async — hence not `checkConfigText`'s synchronous hook) and
 * its references against the document and the platform. Answers the check and the parsed document
 * (for line and column of later issues).
 */
export async function readConfig(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  options: { limits: DocumentLimits; applier: Applier; db: Db; principal: Principal; validate: boolean },
): Promise<{ check: DocumentCheck<ConfigDocument>; doc?: ParsedDocument }> {
  let doc: ParsedDocument | undefined
  try {
    doc = parseYamlDocument(text, options.limits)
    validateConfigDocument(doc)
    const config = interpolateEnv(doc, env) as ConfigDocument
    if (!options.validate) {
      const resources = documentResources(doc, config.spec)
      return { check: { valid: true, errors: [], warnings: [], document: config, resources }, doc }
    }
    const { applier } = options
    // the issues of each body, found first (async); checkResources asks for them by the body itself
    const issues = new Map<object, readonly FieldIssue[]>()
    for (const r of documentResources(doc, config.spec)) {
      const kind = applier.kinds.get(r.kind)
      issues.set(
        r.body,
        kind === undefined
          ? [{ path: '', message: 'this kind cannot be applied on this platform' }]
          : await kind.validate(options.principal, r.body),
      )
    }
    const existing = new Set<string>()
    for (const kind of applier.kinds.values())
      for (const c of await kind.list(options.db)) existing.add(`${kind.kind} ${c.key}`)
    const { resources, warnings } = checkResources(doc, config.spec, {
      refs: (kind, body) => (applier.kinds.get(kind)?.refs(body) ?? []).map((r) => ({ kind: r.kind, ref: r.key })),
      exists: (kind, key) => existing.has(`${kind} ${key}`),
      checkResource: (_kind, body) => issues.get(body) ?? [],
    })
    return { check: { valid: true, errors: [], warnings, document: config, resources }, doc }
  } catch (err) {
    return { check: failedCheck(err), ...(doc === undefined ? {} : { doc }) }
  }
}
