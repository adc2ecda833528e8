import type { NatsNames } from '../platform/nats-names.ts'

/*
 * What the gateway and the resource service agree on for webhooks: the KV bucket the service
 * writes one entry per webhook path into (the gateway keeps a copy in memory from a watch, so
 * matching a call never touches a database), the key of a path, and the RPC subject of a call per
 * HTTP method. Pure; the gateway imports it.
 */
export const WEBHOOKS_BUCKET = 'WEBHOOKS'

/** KV keys allow `[-/_=.a-zA-Z0-9]`; a path is base64url-encoded so any valid path maps to one key. */
export const webhookKey = (path: string): string => `p.${Buffer.from(path, 'utf8').toString('base64url')}`

export const webhookPathOfKey = (key: string): string | null =>
  key.startsWith('p.') ? Buffer.from(key.slice(2), 'base64url').toString('utf8') : null

/** The route id (and `rpc.<id>` subject) a call with this method is forwarded to. */
export const webhookRouteId = (method: string): string => `webhooks.trigger.${method.toLowerCase()}`

export const webhooksBucket = (names: NatsNames): string => names.bucket(WEBHOOKS_BUCKET)

/** A signed webhook call's headers (src/webhooks/signature.ts has the scheme). */
export const TIMESTAMP_HEADER = 'x-webhook-timestamp'
export const SIGNATURE_HEADER = 'x-webhook-signature'
/**
 * Set by the gateway on a signed webhook's call (a client's headers are never forwarded as they
 * are): the body is `{payload, input?}`, the bytes the signature covers (the raw body, or the raw
 * query string with its parsed input for GET/DELETE).
 */
export const ENVELOPE_HEADER = 'x-platform-webhook-envelope'
