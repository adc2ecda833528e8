import { secretAad, type SecretBox } from '../kernel/crypto.ts'
import { Type as T } from '@sinclair/typebox'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, rowType } from '../platform/typed-rows.ts'

/*
 * After an ENCRYPTION_KEY rotation (old key moved to ENCRYPTION_KEY_PREVIOUS), rewrites every
 * stored secret field made with an older key under the current one. Each row is updated only if it
 * still holds the ciphertexts read (compare-and-set on the secrets column), so a concurrent edit
 * is never overwritten; such a row is counted as skipped and picked up by the next run.
 */
export interface ReencryptReport {
  rows: number
  fields: number
  reencrypted: number
  skipped: number
}

/** A resource's stored ciphertexts: field name → ciphertext. */
const SecretsRow = rowType(
  T.Object(
    { id: T.String(), kind: T.String(), secrets: T.Record(T.String(), T.String()) },
    { title: 'resource secrets' },
  ),
)

// Running processes keep answering from their row caches (src/resources/row-cache.ts) with the ciphertexts they
// loaded; those still open while ENCRYPTION_KEY_PREVIOUS is set, and the restart that drops it reloads them.
export async function reencryptSecrets(db: Db, box: SecretBox): Promise<ReencryptReport> {
  const report: ReencryptReport = { rows: 0, fields: 0, reencrypted: 0, skipped: 0 }
  const rows = await anyRows(
    db,
    SecretsRow,
    sql.unsafe`select id, kind, secrets from resources where secrets <> '{}'::jsonb order by id`,
  )
  for (const row of rows) {
    report.rows++
    const { id, kind, secrets: before } = row
    const after: Record<string, string> = {}
    let changed = 0
    for (const [field, ciphertext] of Object.entries(before)) {
      report.fields++
      if (!box.isStale(ciphertext)) {
        after[field] = ciphertext
        continue
      }
      after[field] = box.encrypt(box.decrypt(ciphertext, secretAad(kind, id, field)), secretAad(kind, id, field))
      changed++
    }
    if (changed === 0) continue
    const updated = await db.maybeOneFirst(
      sql.unsafe`update resources set secrets = ${sql.jsonb(after)} where id = ${id}::uuid and secrets = ${sql.jsonb(before)} returning id`,
    )
    if (updated === null) report.skipped++
    else report.reencrypted += changed
  }
  return report
}
