import type { Config } from '../kernel/config.ts'
import type { SecretBox } from '../kernel/crypto.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { OutboundDeps, OutboundOptions } from '../platform/outbound-http.ts'

/** What the OAuth client core needs from the feature using it (connectors, MCP servers). */
export interface OAuthClientDeps {
  db: Db
  config: Config
  box: SecretBox
  log: Logger
}

/** How a request to the authorization server goes out: the using feature's guarded-client policy. */
export interface ProviderCall {
  timeoutMs: number
  policy: Pick<OutboundOptions, 'httpsOnly' | 'httpHosts' | 'maxResponseBytes' | 'allowPrivate'>
  deps: OutboundDeps
}

/** Which user's connection to which resource (a connector, an MCP server): the row key of flows and tokens. */
export interface TokenOwner {
  userId: string
  resourceId: string
}
