import type { StartedFlow } from './flow.ts'

/*
 * The answers of a feature's OAuth connection routes (a connector's, an MCP server's): the same
 * whatever the connection is for. Plain replies (status, body, headers) that the feature's bound
 * handlers return as they are; the routes themselves stay the feature's.
 */

/** Start: the URL to open, the state and its lifetime; the nonce cookie set when binding is on. */
export const startReply = (
  flow: StartedFlow,
): { body: Omit<StartedFlow, 'cookie'>; headers?: Record<string, string> } => ({
  body: { authorization_url: flow.authorization_url, state: flow.state, expires_in: flow.expires_in },
  ...(flow.cookie === undefined ? {} : { headers: { 'set-cookie': flow.cookie } }),
})

/** Disconnect: no body; whether the authorization server took the revocation, as a header. */
export const disconnectReply = (revoked: boolean): { status: number; headers: Record<string, string> } => ({
  status: 204,
  headers: { 'x-oauth-revoked': String(revoked) },
})

/** The callback's headers: the used nonce cookie removed (`clearCookie`, its Set-Cookie), the answer not cached. */
export const callbackHeaders = (clearCookie: string): Record<string, string> => ({
  'set-cookie': clearCookie,
  'cache-control': 'no-store',
})
