import type { Static } from '@sinclair/typebox'
import type { ConnectorSpec } from '../../schemas/connector.ts'
import type { Config } from '../kernel/config.ts'
import type { SecretBox } from '../kernel/crypto.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import { extraCa, parseHostList, type OutboundDeps, type OutboundOptions } from '../platform/outbound-http.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'

/** What connector calls and OAuth flows need; built in the service role (routes) and the workers role (agent tools). */
export interface ConnectorDeps {
  db: Db
  config: Config
  resources: ResourceService
  box: SecretBox
  log: Logger
  /** Name resolution override (tests); default: the system resolver. */
  lookup?: OutboundDeps['lookup']
}

export type ConnectorRecord = ResourceRecord<Static<typeof ConnectorSpec>> & {
  namespace: string
  owner_id: string | null
}

/**
 * The guarded client's options for every request a connector makes (its API, the OAuth token and
 * revocation endpoints): HTTPS unless an admin listed the host in CONNECTOR_HTTP_HOSTS, private
 * addresses refused after DNS (never `allowPrivate`: the URL is a user's choice), response capped.
 */
export function outboundPolicy(
  config: Config,
): Pick<OutboundOptions, 'httpsOnly' | 'httpHosts' | 'maxResponseBytes' | 'allowPrivate'> {
  const http = parseHostList(config.CONNECTOR_HTTP_HOSTS)
  return {
    httpsOnly: http !== '*',
    httpHosts: http === '*' ? [] : http,
    maxResponseBytes: config.CONNECTOR_MAX_RESPONSE_BYTES,
    allowPrivate: false,
  }
}

export function outboundDeps(d: Pick<ConnectorDeps, 'config' | 'lookup'>): OutboundDeps {
  const ca = extraCa(d.config.OUTBOUND_EXTRA_CA_FILE)
  return { ...(ca === undefined ? {} : { ca }), ...(d.lookup === undefined ? {} : { lookup: d.lookup }) }
}

/** Per-attempt timeout: the connector's own, clamped to CONNECTOR_TIMEOUT_SECONDS. */
export const attemptTimeoutMs = (config: Config, seconds: number): number =>
  Math.round(Math.min(seconds, config.CONNECTOR_TIMEOUT_SECONDS) * 1000)
