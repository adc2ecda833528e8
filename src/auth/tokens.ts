import { createHmac, randomUUID } from 'node:crypto'
import { EXECUTION_SCOPE_CLAIM } from './caller.ts'

/**
 * Access tokens: HS256 JWTs signed with SECRET_KEY, `type: access`, short-lived (ACCESS_TOKEN_EXPIRE_MINUTES).
 * `sid` names the login session (its refresh-token family): logging out revokes the family, and
 * with it every access token carrying its id (src/auth/principal.ts).
 */
export async function issueAccessToken(
  secret: string,
  claims: { sub: string; email: string; sid?: string },
  ttlMinutes: number,
): Promise<string> {
  return sign(
    secret,
    { email: claims.email, type: 'access', ...(claims.sid === undefined ? {} : { sid: claims.sid }) },
    claims.sub,
    ttlMinutes,
  )
}

/*
 * The token a function receives: an access token that also names its execution (`exe`, the job
 * id) and attempt (`att`) under `scope: execution`. The service accepts it only while that attempt
 * of that job is running (src/auth/principal.ts), so it dies with the execution, and only with the
 * permissions of EXECUTION_SCOPE (src/auth/execution-scope.ts). The lifetime is the caller's
 * choice, bounded by FUNCTION_TOKEN_MAX_MINUTES in src/functions/job-executor.ts.
 */
export async function issueExecutionToken(
  secret: string,
  claims: { sub: string; email: string; executionId: string; attempt: number },
  ttlMinutes: number,
): Promise<string> {
  return sign(
    secret,
    { email: claims.email, type: 'access', scope: EXECUTION_SCOPE_CLAIM, exe: claims.executionId, att: claims.attempt },
    claims.sub,
    ttlMinutes,
  )
}

/** `{"alg":"HS256","typ":"JWT"}`, the protected header of every token, base64url-encoded once. */
const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')

/*
 * An HS256 JWS in compact form, as jose's SignJWT makes it (same header and claims), signed with
 * node:crypto's HMAC synchronously: jose signs through WebCrypto, which imports the key again and
 * hops to the thread pool on every call (a function's execution token is minted on each run).
 */
function sign(secret: string, payload: Record<string, unknown>, sub: string, ttlMinutes: number): Promise<string> {
  const iat = Math.floor(Date.now() / 1000)
  const claims = { ...payload, sub, iat, jti: randomUUID(), exp: iat + Math.round(ttlMinutes * 60) }
  const signingInput = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
  return Promise.resolve(`${signingInput}.${createHmac('sha256', secret).update(signingInput).digest('base64url')}`)
}
