import type { Principal } from '../auth/principal.ts'
import { loadPrincipal } from '../auth/principal.ts'
import { AppError, forbidden, notFound } from '../kernel/errors.ts'
import { mcpServerKind } from '../kinds/mcp-server/kind.ts'
import { secretKind } from '../kinds/secret/kind.ts'
import { permissionSet } from '../feature/permissions.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { McpDeps, McpServerRecord } from './deps.ts'

/** The permissions checked here, for the reference (the feature contributes the list). */
export const mcpServerPermissions = permissionSet()
mcpServerPermissions.add('platform.mcp-servers/{namespace}/{name}.use:own', "call the tools of one's own MCP servers")
mcpServerPermissions.add('platform.mcp-servers/{namespace}/{name}.use:all', 'call the tools of any MCP server')

/*
 * Who may use a remote MCP server, checked on every tool call with the server as it is now: the
 * caller must be able to read it (else 404) and hold `use` on it (else 403). Its credential is a
 * secret resource it names (`auth.secret`), used only when the server's OWNER may read that
 * secret — otherwise anyone could name someone else's secret and point `url` at a server of theirs
 * (the connectors' rule, src/connectors/secrets.ts). The caller needs no access to the secret.
 */
export async function mcpServerFor(
  d: Pick<McpDeps, 'resources'>,
  p: Principal,
  namespace: string,
  name: string,
): Promise<McpServerRecord> {
  const s = (await d.resources.get(p, mcpServerKind, { namespace, name })) as McpServerRecord
  if (s.is_active === false) throw notFound(`MCP server ${namespace}/${name} not found`)
  if (!canOnResource(p, mcpServerKind, 'use', { namespace, name, ownerId: s.owner_id }))
    throw forbidden(`not allowed to use MCP server ${namespace}/${name}`)
  return s
}

const unavailable = (detail: string) => AppError.of('mcp_server.secret_unavailable', detail)

/**
 * The value of a secret the server names, used only when the server's owner may read it (the
 * header's value, or the OAuth client secret of a configured client id).
 */
export async function ownerSecretValue(
  d: Pick<McpDeps, 'db' | 'resources'>,
  server: McpServerRecord,
  ref: string,
): Promise<string> {
  const what = `MCP server ${server.namespace}/${server.name}`
  const [secret] = await d.resources.loadMany(secretKind, [ref])
  if (secret === undefined || secret.is_active === false)
    throw unavailable(`the secret ${ref} of ${what} does not exist`)
  const [ns, name] = ref.split('/') as [string, string]
  let allowed = server.owner_id !== null && secret.owner_id === server.owner_id
  if (!allowed && server.owner_id !== null) {
    const owner = await loadPrincipal(d.db, { sub: server.owner_id, via: 'jwt' }).catch(() => null)
    allowed =
      owner !== null &&
      canOnResource(owner, secretKind, 'read', { namespace: ns, name, ownerId: secret.owner_id ?? null })
  }
  if (!allowed) throw unavailable(`the owner of ${what} may not use the secret ${ref}`)
  const value = (await d.resources.secretsOf(secretKind, secret.id))['value']
  if (value === undefined || value === '') throw unavailable(`the secret ${ref} has no value`)
  return value
}

/** The server's auth header (auth type header), or none; OAuth servers' tokens come from oauth.ts. */
export async function authHeaders(
  d: Pick<McpDeps, 'db' | 'resources'>,
  server: McpServerRecord,
): Promise<Record<string, string>> {
  const a = server.auth
  if ((a.type ?? 'none') !== 'header' || a.secret === undefined) return {}
  const value = await ownerSecretValue(d, server, a.secret)
  return { [(a.header ?? 'Authorization').toLowerCase()]: `${a.prefix ?? ''}${value}` }
}
