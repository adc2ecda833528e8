import { checkResources } from './check-resources.ts'
import { validateConfigDocument, type ConfigDocument } from './config-schema.ts'
import { failedCheck, type DocumentCheck, type ResourceChecks } from './document-check.ts'
import type { DocumentLimits } from './document-limits.ts'
import { interpolateEnv } from './interpolate-env.ts'
import { parseYamlDocument } from './parse-document.ts'

/**
 * A config's text checked end to end, as `POST /api/v1/config/validate` answers it: parsed within
 * the limits, its envelope, `${VAR}` from `env`, each resource against its kind, references. The
 * document returned holds the interpolated values; every issue carries line and column.
 */
export function checkConfigText(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  options: ResourceChecks & { limits: DocumentLimits },
): DocumentCheck<ConfigDocument> {
  try {
    const doc = parseYamlDocument(text, options.limits)
    validateConfigDocument(doc)
    const config = interpolateEnv(doc, env) as ConfigDocument
    const { resources, warnings } = checkResources(doc, config.spec, options)
    return { valid: true, errors: [], warnings, document: config, resources }
  } catch (err) {
    return failedCheck(err)
  }
}
