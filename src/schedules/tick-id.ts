import { createHash } from 'node:crypto'

/*
 * Job ids are UUIDs (the executions table, JobState), so the job of one schedule tick gets the
 * UUID v5 (RFC 9562 §5.5, SHA-1, in the URL namespace) of `sched:<schedule id>:<tick epoch ms>`:
 * every host that fires the same tick enqueues the same job id, and the job system keeps one —
 * JOBS drops a repeated `Nats-Msg-Id` within its duplicate window (10 min), and later a claim
 * finds the existing JOB_STATE entry (kept 24 h) and does not run it again.
 */
const URL_NAMESPACE = Buffer.from('6ba7b8119dad11d180b400c04fd430c8', 'hex')

export function uuidV5(name: string, namespace: Buffer = URL_NAMESPACE): string {
  const h = createHash('sha1').update(namespace).update(name, 'utf8').digest()
  const b = h.subarray(0, 16)
  b[6] = ((b[6] as number) & 0x0f) | 0x50
  b[8] = ((b[8] as number) & 0x3f) | 0x80
  const x = b.toString('hex')
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`
}

export const tickName = (scheduleId: string, tickMs: number): string => `sched:${scheduleId}:${String(tickMs)}`
export const tickJobId = (scheduleId: string, tickMs: number): string => uuidV5(tickName(scheduleId, tickMs))
