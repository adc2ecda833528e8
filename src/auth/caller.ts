/*
 * Who called, as the gateway verified it, and the claim naming an execution token: the gateway
 * sets them, the RPC wire carries them, and principals are resolved from them service-side. They
 * live with auth (below the api layer) because principal resolution and token issuing need them.
 */

/** The authenticated caller as the gateway saw it (a verified token); permissions are resolved service-side. */
export interface Caller {
  /** The user id for a JWT; empty for an API key (the service resolves the owner from `keyHash`). */
  sub: string
  /** How the caller authenticated. */
  via: 'jwt' | 'api_key'
  /** SHA-256 (hex) of the presented API key; the gateway never sees the key table. */
  keyHash?: string
  /**
   * Set for a function's execution token (`scope: execution`): the job and attempt it belongs to.
   * The service accepts it only while that attempt runs, with the execution scope's permissions.
   */
  execution?: { id: string; attempt: number }
  /** The login session a user's access token belongs to (its refresh-token family): refused once that session logged out. */
  sid?: string
}

/** The JWT `scope` claim of an execution token (`tokens.ts` issueExecutionToken). */
export const EXECUTION_SCOPE_CLAIM = 'execution'
