import { Objm, type ObjectStore } from '@nats-io/obj'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'

/*
 * Results too large for a JOB_STATE entry (over 64 KB) go to the object store bucket JOB_RESULTS,
 * which expires with the same retention as the state. Workers stay free of Postgres; the mirror
 * copies the result into the execution row.
 */
export interface ResultStore {
  put(jobId: string, json: string): Promise<void>
  /** The JSON text, or null when it expired or never existed. */
  get(jobId: string): Promise<string | null>
}

export async function openResultStore(nc: NatsConnection, names: NatsNames): Promise<ResultStore> {
  const os: ObjectStore = await new Objm(nc).open(names.bucket('JOB_RESULTS'))
  return {
    async put(jobId, json) {
      await os.putBlob({ name: jobId }, new TextEncoder().encode(json))
    },
    async get(jobId) {
      const blob = await os.getBlob(jobId)
      return blob === null ? null : new TextDecoder().decode(blob)
    },
  }
}
