import type { Static } from '@sinclair/typebox'
import { McpServerSpec } from '../../../schemas/mcp-server.ts'
import type { FieldIssue } from '../../kernel/errors.ts'
import { defineKind } from '../../resources/kind.ts'

/*
 * Remote MCP servers (`/api/v1/mcp-servers/{namespace}/{name}`): an endpoint speaking the Model
 * Context Protocol over Streamable HTTP (or the older HTTP+SSE transport), whose tools agents enable
 * (`enabled_mcp_servers`). Calls go through the guarded outbound client (src/mcp-servers/); the
 * credential is a reference to a secret (`auth.secret`), never stored here, or each user's own
 * OAuth connection (`auth.type: oauth`, src/mcp-servers/oauth.ts). The URL rule is the connectors' one: http(s) here,
 * plain HTTP only to the hosts an admin listed (CONNECTOR_HTTP_HOSTS, checked on every request).
 */
export function mcpServerIssues(s: Static<typeof McpServerSpec>): FieldIssue[] {
  const issues: FieldIssue[] = []
  let url: URL | undefined
  try {
    url = new URL(s.url)
  } catch {
    issues.push({ path: 'url', message: 'not a valid URL' })
  }
  if (url !== undefined) {
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      issues.push({ path: 'url', message: 'must be an http(s) URL' })
    if (url.username !== '' || url.password !== '')
      issues.push({ path: 'url', message: 'credentials do not belong in the URL: use auth and a secret' })
    if (url.hash !== '') issues.push({ path: 'url', message: 'a fragment is not allowed' })
  }
  if ((s.auth.type ?? 'none') === 'header' && s.auth.secret === undefined)
    issues.push({ path: 'auth.secret', message: 'required for auth type header' })
  if (s.auth.type === 'oauth' && s.auth.secret !== undefined && s.auth.client_id === undefined)
    issues.push({ path: 'auth.client_id', message: 'a client secret belongs to a client id registered in advance' })
  if (s.auth.type !== 'oauth' && (s.auth.client_id !== undefined || s.auth.scopes !== undefined))
    issues.push({ path: 'auth.type', message: 'client_id and scopes are for auth type oauth' })
  return issues
}

export const mcpServerKind = defineKind({
  kind: 'mcp_server',
  plural: 'mcp-servers',
  title: 'McpServer',
  description: 'Remote MCP servers (Streamable HTTP or HTTP+SSE) whose tools agents use.',
  spec: McpServerSpec,
  refs: (s) => (s.auth.secret === undefined ? [] : [{ kind: 'secret', ref: s.auth.secret }]),
  validate: mcpServerIssues,
})
