import { randomUUID } from 'node:crypto'
import { SignJWT } from 'jose'
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

function sign(secret: string, payload: Record<string, unknown>, sub: string, ttlMinutes: number): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(sub)
    .setIssuedAt()
    .setJti(randomUUID())
    .setExpirationTime(`${String(Math.round(ttlMinutes * 60))}s`)
    .sign(new TextEncoder().encode(secret))
}
