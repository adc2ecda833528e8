import { createHash } from 'node:crypto'

/** Whether a string is a UUID (any version): what user ids, job ids and execution ids are. */
export const isUuid = (s: unknown): s is string =>
  typeof s === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)

const URL_NAMESPACE = Buffer.from('6ba7b8119dad11d180b400c04fd430c8', 'hex')

/**
 * The UUID v5 (RFC 9562 §5.5, SHA-1; by default in the URL namespace) of a name: the same name
 * gives the same id on every host, so a job made for one event (a schedule's tick, a database
 * trigger's batch) gets one id however many hosts make it, and the job system keeps one.
 */
export function uuidV5(name: string, namespace: Buffer = URL_NAMESPACE): string {
  const h = createHash('sha1').update(namespace).update(name, 'utf8').digest()
  const b = h.subarray(0, 16)
  b[6] = ((b[6] as number) & 0x0f) | 0x50
  b[8] = ((b[8] as number) & 0x3f) | 0x80
  const x = b.toString('hex')
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`
}
