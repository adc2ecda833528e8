import type { Logger } from '../kernel/log.ts'
import type { BlobStore } from '../platform/blob-store.ts'
import type { Db } from '../platform/db.ts'
import { dueGarbage, forgetGarbage } from './store.ts'

/*
 * Deletes blobs nobody references any more: versions deleted with their file or collection (the
 * trigger of migration 0010 lists their objects), refused uploads, and upload reservations whose
 * commit never came (FILES_UPLOAD_STAGING_SECONDS). A row goes only after its object is gone, so
 * a NATS failure means "try again next round", never a leaked blob. Every service replica may
 * sweep: deleting an object twice is harmless.
 */
export function startBlobSweeper(d: { db: Db; blobs: () => Promise<BlobStore>; log: Logger; everyMs: number }): {
  sweep(): Promise<number>
  stop(): Promise<void>
} {
  let running: Promise<number> | null = null
  const sweep = (): Promise<number> => {
    running ??= (async () => {
      let removed = 0
      try {
        const store = await d.blobs()
        for (const { object_name: object } of await dueGarbage(d.db, 200)) {
          await store.delete(object)
          await forgetGarbage(d.db, object)
          removed++
        }
        if (removed > 0) d.log.debug({ removed }, 'file blobs swept')
      } catch (err) {
        d.log.warn({ err }, 'file blob sweep failed; retrying next round')
      } finally {
        running = null
      }
      return removed
    })()
    return running
  }
  const timer = setInterval(() => void sweep(), d.everyMs)
  timer.unref()
  return {
    sweep,
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}
