import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'

/*
 * Telling the worker that runs a job that the job was cancelled (the cancel endpoint, the stuck-job
 * flush). Each worker process listens on one broadcast subject, `evt.job-cancelled` (payload: the
 * job id), and aborts the run when it holds that job. Before, every run subscribed to its own done
 * channel `evt.job.<id>` for the whole run: a SUB and an UNSUB per job, and the bucket's republish
 * of the run's own state writes delivered back to it and decoded, only to look for `cancelled`.
 * Core NATS, like that subscription was: a worker cut off from NATS when the notice goes out misses
 * it either way, and its run then ends on its own and finds the state terminal when it records the
 * outcome.
 */
const encoder = new TextEncoder()
const decoder = new TextDecoder()

export const jobCancelSubject = (names: NatsNames): string => names.subject('evt.job-cancelled')

/** After the state says `cancelled` (its CAS succeeded): tell the worker running the job, if any. */
export function announceCancel(nc: NatsConnection, names: NatsNames, id: string): void {
  nc.publish(jobCancelSubject(names), encoder.encode(id))
}

/** A worker process's one listener: `onCancel(id)` for every announced cancel. Returns the stopper. */
export function listenForCancels(nc: NatsConnection, names: NatsNames, onCancel: (id: string) => void): () => void {
  const sub = nc.subscribe(jobCancelSubject(names), {
    callback: (err, msg) => {
      if (err === null) onCancel(decoder.decode(msg.data))
    },
  })
  return () => sub.unsubscribe()
}
