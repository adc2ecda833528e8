import { secretAad, type SecretBox } from '../kernel/crypto.ts'
import type { AnyKind } from './kind.ts'

/** Splits write-only fields out of the spec; null clears a secret, a string replaces it, absent keeps it. */
export function splitSecrets(
  kind: AnyKind,
  input: Record<string, unknown>,
): { spec: Record<string, unknown>; secretInput: Record<string, string | null> } {
  const spec = { ...input }
  const secretInput: Record<string, string | null> = {}
  for (const key of kind.secrets) {
    if (key in spec) {
      const v = spec[key]
      secretInput[key] = typeof v === 'string' && v !== '' ? v : null
      delete spec[key]
    }
  }
  return { spec, secretInput }
}

/** The stored secrets after `input` (encrypted, bound to kind, id and field). */
export function sealSecrets(
  box: SecretBox,
  kind: AnyKind,
  id: string,
  existing: Record<string, string>,
  input: Record<string, string | null>,
): Record<string, string> {
  const out = { ...existing }
  for (const [key, value] of Object.entries(input)) {
    if (value === null) delete out[key]
    else out[key] = box.encrypt(value, secretAad(kind.kind, id, key))
  }
  return out
}

/** One stored secret in clear. */
export const openSecret = (box: SecretBox, kind: AnyKind, id: string, field: string, sealed: string): string =>
  box.decrypt(sealed, secretAad(kind.kind, id, field))

/** Every stored secret of a row in clear (for comparing, never for responses). */
export const openSecrets = (
  box: SecretBox,
  kind: AnyKind,
  row: { id: string; secrets: Record<string, string> },
): Record<string, string> =>
  Object.fromEntries(Object.entries(row.secrets).map(([k, v]) => [k, openSecret(box, kind, row.id, k, v)]))
