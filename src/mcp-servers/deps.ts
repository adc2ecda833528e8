import type { Static } from '@sinclair/typebox'
import type { McpServerSpec } from '../../schemas/mcp-server.ts'
import type { Config } from '../kernel/config.ts'
import type { SecretBox } from '../kernel/crypto.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import { extraCa, parseHostList, type OutboundDeps } from '../platform/outbound-http.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import type { ToolListCache } from './tool-cache.ts'
import type { SessionCache } from './session.ts'

/** What the MCP client and its agent tools need; built once per worker (the feature's `tools`). */
export interface McpDeps {
  db: Db
  config: Config
  resources: ResourceService
  log: Logger
  /** Tool lists per server, this process's (tool-cache.ts). */
  toolLists: ToolListCache
  /** Open MCP sessions per server, this process's (session.ts). */
  sessions: SessionCache
  /** Encrypts OAuth tokens and registered clients' secrets (oauth.ts); servers with `auth.type: oauth` need it. */
  box?: SecretBox
  /** Name resolution override (tests); default: the system resolver. */
  lookup?: OutboundDeps['lookup']
}

export type McpServerRecord = ResourceRecord<Static<typeof McpServerSpec>> & {
  namespace: string
  owner_id: string | null
}

/**
 * The guarded client's rules for every request to a remote MCP server, the connectors' ones: HTTPS
 * unless an admin listed the host in CONNECTOR_HTTP_HOSTS, private addresses refused after DNS
 * (never `allowPrivate`: the URL is a user's choice), no redirects.
 */
export function mcpOutbound(d: Pick<McpDeps, 'config' | 'lookup'>): {
  policy: { httpsOnly: boolean; httpHosts: readonly string[]; allowPrivate: false }
  deps: OutboundDeps
} {
  const http = parseHostList(d.config.CONNECTOR_HTTP_HOSTS)
  const ca = extraCa(d.config.OUTBOUND_EXTRA_CA_FILE)
  return {
    policy: { httpsOnly: http !== '*', httpHosts: http === '*' ? [] : http, allowPrivate: false },
    deps: { ...(ca === undefined ? {} : { ca }), ...(d.lookup === undefined ? {} : { lookup: d.lookup }) },
  }
}

/** One request's deadline: the server's own, clamped to MCP_CLIENT_TIMEOUT_SECONDS. */
export const requestTimeoutMs = (config: Config, seconds: number): number =>
  Math.round(Math.min(seconds, config.MCP_CLIENT_TIMEOUT_SECONDS) * 1000)
