import type { Principal } from '../auth/principal.ts'
import type { AnyKind } from './kind.ts'
import type { ResourceRecord } from './service.ts'

/*
 * Read-time additions to the records the resource routes answer (get, list, create, update): a
 * feature registers a decorator that may add fields computed now (e.g. src/files/icons.ts resolves
 * `icon` into `icon_url`, which cannot be stored: signed URLs expire). Decorators never remove or
 * change stored fields, so a record still round-trips through PUT/PATCH.
 */
export type RecordDecorator = (p: Principal, kind: AnyKind, records: ResourceRecord[]) => Promise<void>

const decorators = new Set<RecordDecorator>()

/** Returns the function that unregisters it (at shutdown). */
export function registerRecordDecorator(d: RecordDecorator): () => void {
  decorators.add(d)
  return () => decorators.delete(d)
}

export async function decorateRecords<R extends ResourceRecord>(p: Principal, kind: AnyKind, records: R[]): Promise<R[]> {
  for (const d of decorators) await d(p, kind, records)
  return records
}
