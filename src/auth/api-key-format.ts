import { createHash, randomBytes } from 'node:crypto'

/*
 * API keys look like `apk_<43 base64url chars>` (256 random bits): the prefix makes them
 * recognisable (secret scanners, the gateway telling them from JWTs); only the SHA-256 is stored,
 * which is enough for a key this random (no salt or slow hash needed). Pure: the gateway imports it.
 */
export const API_KEY_PREFIX = 'apk_'

export const isApiKey = (token: string): boolean => token.startsWith(API_KEY_PREFIX)

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex')

export function newApiKey(): { key: string; hash: string; prefix: string } {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url')
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 12) }
}
