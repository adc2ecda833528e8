import { randomUUID } from 'node:crypto'
import { SignJWT } from 'jose'

/** Access tokens: HS256 JWTs signed with SECRET_KEY, `type: access`, short-lived (ACCESS_TOKEN_EXPIRE_MINUTES). */
export async function issueAccessToken(secret: string, claims: { sub: string; email: string }, ttlMinutes: number): Promise<string> {
  return new SignJWT({ email: claims.email, type: 'access' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(claims.sub)
    .setIssuedAt()
    .setJti(randomUUID())
    .setExpirationTime(`${String(ttlMinutes * 60)}s`)
    .sign(new TextEncoder().encode(secret))
}
