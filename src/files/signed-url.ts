import { createHmac } from 'node:crypto'
import { SignJWT, jwtVerify } from 'jose'

/*
 * Temporary download URLs (`POST /files/…/url`, `GET /files/_signed/{token}`): an HS256 JWT naming
 * ONE file version (`sub`) and its expiry, signed with a key derived from SECRET_KEY for this
 * purpose only — so a file token is never an access token (other key) and an access token never
 * opens a file. No Authorization header is needed; whoever holds the URL reads that version until
 * it expires. Deleting the file (or its collection) makes the URL answer 404.
 */
const PURPOSE = 'platform.files.signed-url.v1'
const ISSUER = 'platform-files'

const keyOf = (secret: string): Uint8Array => new Uint8Array(createHmac('sha256', secret).update(PURPOSE).digest())

export async function signFileVersion(secret: string, versionId: string, seconds: number): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ISSUER)
    .setSubject(versionId)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
    .sign(keyOf(secret))
}

/** The version id a token names; null when it is forged, expired or malformed. */
export async function verifyFileToken(secret: string, token: string): Promise<string | null> {
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ['HS256'],
      issuer: ISSUER,
      requiredClaims: ['exp', 'sub'],
      clockTolerance: 0,
    })
    return typeof payload.sub === 'string' ? payload.sub : null
  } catch {
    return null
  }
}
