import type { Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { enqueueFunction, invokeFunction, type InvokeOutcome } from '../functions/invoke.ts'
import type { InvokeDeps } from '../feature/invoke-deps.ts'
import { functionKind } from '../kinds/function/kind.ts'
import type { Db } from '../platform/db.ts'
import type { BlobStore } from '../platform/blob-store.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceService } from '../resources/service.ts'
import type { CollectionRecord } from './access.ts'

/** What the files service and the agent tools share. */
export interface FilesDeps {
  db: Db
  config: Config
  resources: ResourceService
  blobs: () => Promise<BlobStore>
  invoke: InvokeDeps
  log: Logger
}

/**
 * Runs a collection's content_filter_function (sync, waits) or post_upload_function (async job)
 * through the one function path (src/functions/invoke.ts), as the uploading user. Checked now,
 * at run time: the function must exist and be active, and either the uploader may execute it or
 * it belongs to the collection's owner (who attached it to the collection) — never a function of
 * a third party that the uploader could not run. A filter that cannot run refuses the upload.
 */
export async function runCollectionFunction(
  d: FilesDeps,
  p: Principal,
  c: CollectionRecord,
  ref: string,
  input: unknown,
  mode: 'sync' | 'async',
): Promise<InvokeOutcome | undefined> {
  const [fn] = await d.resources.loadMany(functionKind, [ref])
  const unavailable = () =>
    new AppError(
      502,
      'file.filter_failed',
      `the collection's function ${ref} is missing, inactive or not allowed for this upload`,
    )
  if (fn === undefined || fn.is_active === false) throw unavailable()
  const [namespace, name] = ref.split('/') as [string, string]
  const owner = (fn.owner_id as string | null | undefined) ?? null
  const allowed =
    canOnResource(p, functionKind, 'execute', { namespace, name, ownerId: owner }) ||
    (owner !== null && owner === c.owner_id)
  if (!allowed) throw unavailable()
  const triggerId = `collection:${c.namespace}/${c.name}`
  if (mode === 'async') {
    await enqueueFunction(d.invoke, p, fn, { input, sync: false, triggerType: 'collection', triggerId })
    return undefined
  }
  return invokeFunction(d.invoke, p, fn, { input, triggerType: 'collection', triggerId })
}
