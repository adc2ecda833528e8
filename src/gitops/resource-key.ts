/*
 * How a resource of a document is named among its kind, the form references use: `<namespace>/<name>`
 * for namespaced kinds (namespace `default` when left out, as the API does), the bare name for the
 * kinds addressed by a unique name (schedules and database triggers too: config addresses them by
 * name alone), the email of a user (lower case, as stored), the path of a webhook and the package
 * name of a dependency. Each equals the kind's `ConfigKind.keyOf` (src/feature/config-kinds.ts).
 */
const BY_NAME = new Set(['role', 'llm_provider', 'database_connection', 'schedule', 'database_trigger'])

export function resourceKey(kind: string, body: Readonly<Record<string, unknown>>): string {
  const text = (field: string): string => {
    const v = body[field]
    return typeof v === 'string' ? v : ''
  }
  if (kind === 'user') return text('email').toLowerCase()
  if (kind === 'webhook') return text('path')
  // PEP 503 normalized, as the dependencies table stores it (src/dependencies/installer.ts normalizeName)
  if (kind === 'dependency')
    return text('package_name')
      .toLowerCase()
      .replace(/[-_.]+/g, '-')
  if (BY_NAME.has(kind)) return text('name')
  const ns = text('namespace')
  return `${ns === '' ? 'default' : ns}/${text('name')}`
}
