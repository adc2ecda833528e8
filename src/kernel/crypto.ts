import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'
import { AppError } from './errors.ts'

/*
 * Secrets at rest: AES-256-GCM with a key derived from ENCRYPTION_KEY by HKDF, and the row's
 * identity (kind, id, field) bound in as associated data so a ciphertext copied to another row or
 * field does not decrypt. The key id in each ciphertext lets old keys keep decrypting after a
 * rotation (pass them as `previous`).
 */
/** The associated data of a stored secret field: the row identity, so a copied ciphertext fails. */
export const secretAad = (kind: string, rowId: string, field: string): string => `${kind}:${rowId}:${field}`

/** ENCRYPTION_KEY_PREVIOUS as a list (comma-separated in the environment). */
export const previousKeys = (csv: string): string[] =>
  csv
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '')

export interface SecretBox {
  encrypt(plaintext: string, aad: string): string
  decrypt(ciphertext: string, aad: string): string
  /** Whether a ciphertext was made with an older key and should be re-encrypted. */
  isStale(ciphertext: string): boolean
}

interface Key {
  id: string
  key: Buffer
}

function deriveKey(secret: string): Key {
  const key = Buffer.from(hkdfSync('sha256', secret, 'platform/secrets', 'aes-256-gcm/v1', 32))
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 8), key }
}

export function createSecretBox(current: string, previous: readonly string[] = []): SecretBox {
  const primary = deriveKey(current)
  const keys = new Map<string, Key>([primary, ...previous.map(deriveKey)].map((k) => [k.id, k]))
  return {
    encrypt(plaintext, aad) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', primary.key, iv)
      cipher.setAAD(Buffer.from(aad))
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
      return `v1:${primary.id}:${iv.toString('base64url')}:${body.toString('base64url')}`
    },
    decrypt(ciphertext, aad) {
      const [v, id, ivText, bodyText] = ciphertext.split(':')
      const key = id === undefined ? undefined : keys.get(id)
      if (v !== 'v1' || key === undefined || ivText === undefined || bodyText === undefined) {
        throw new AppError(500, 'secrets.undecryptable', 'a stored secret cannot be decrypted with the configured keys')
      }
      const body = Buffer.from(bodyText, 'base64url')
      const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(ivText, 'base64url'))
      decipher.setAAD(Buffer.from(aad))
      decipher.setAuthTag(body.subarray(body.length - 16))
      try {
        return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString('utf8')
      } catch (err) {
        throw new AppError(500, 'secrets.undecryptable', 'a stored secret failed authentication', { cause: err })
      }
    },
    isStale(ciphertext) {
      return ciphertext.split(':')[1] !== primary.id
    },
  }
}
