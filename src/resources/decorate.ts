import type { Principal } from '../auth/principal.ts'
import type { AnyKind } from './kind.ts'
import type { ResourceRecord } from './service.ts'

/*
 * Read-time additions to the records the resource routes answer (get, list, create, update): a
 * feature contributes a decorator (`recordDecorators` of its Feature) that may add fields computed now (e.g. src/files/icons.ts resolves
 * `icon` into `icon_url`, which cannot be stored: signed URLs expire). Decorators never remove or
 * change stored fields, so a record still round-trips through PUT/PATCH. A decorator answers the
 * fields to add per record (undefined: none) and never writes to the records it is given: they
 * are the shared, frozen records of the row cache (src/resources/row.ts `toRecord`).
 */
export type RecordDecorator = (
  p: Principal,
  kind: AnyKind,
  records: readonly ResourceRecord[],
) => Promise<readonly (Record<string, unknown> | undefined)[]>

/** The records with every decorator's additions: a record that gets some is a new object, the others are the ones given. */
export async function decorateRecords<R extends ResourceRecord>(
  decorators: readonly RecordDecorator[],
  p: Principal,
  kind: AnyKind,
  records: R[],
): Promise<R[]> {
  let out = records
  for (const d of decorators) {
    const added = await d(p, kind, out)
    out = out.map((r, i) => {
      const extra = added[i]
      return extra === undefined ? r : { ...r, ...extra }
    })
  }
  return out
}
