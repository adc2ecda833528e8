/*
 * How a resource of a document is named among its kind, the form references use: `<namespace>/<name>`
 * for namespaced kinds (namespace `default` when left out, as the API does), the bare name for the
 * kinds addressed by a unique name, the email of a user and the package name of a dependency.
 */
const BY_NAME = new Set(['role', 'llm_provider', 'database_connection'])

export function resourceKey(kind: string, body: Readonly<Record<string, unknown>>): string {
  const text = (field: string): string => {
    const v = body[field]
    return typeof v === 'string' ? v : ''
  }
  if (kind === 'user') return text('email')
  if (kind === 'dependency') return text('package_name')
  if (BY_NAME.has(kind)) return text('name')
  const ns = text('namespace')
  return `${ns === '' ? 'default' : ns}/${text('name')}`
}
