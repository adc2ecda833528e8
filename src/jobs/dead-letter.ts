import { headers } from '@nats-io/transport-node'
import { isTerminal, jobErrorText, type JobError, type StateEntry } from './job-state.ts'
import type { PulledMessage } from './puller.ts'
import { publishDurably } from './publish.ts'
import type { WorkerState } from './worker-state.ts'

/** Publishes the job's message to `dlq.<pool>.<id>`, ends its state `failed` and terminates the message. */
export async function moveToDeadLetter(
  w: WorkerState,
  m: PulledMessage,
  cur: StateEntry,
  reason: JobError,
): Promise<void> {
  const { o } = w
  const h = headers()
  h.set('X-Error', (jobErrorText(reason) ?? '').slice(0, 1000).replace(/[\r\n]+/g, ' '))
  h.set('X-Error-Code', reason.code)
  h.set('X-Attempts', String(cur.state.attempts))
  h.set('X-Orig-Subject', m.subject)
  const ack = await publishDurably(w.js, o.names.subject(`dlq.${o.pool}.${cur.state.id}`), m.data, {
    msgID: `dlq-${cur.state.id}-${String(cur.state.attempts)}`,
    headers: h,
  })
  await o.store.transition(
    cur.state.id,
    (s) =>
      isTerminal(s.status)
        ? null
        : {
            ...s,
            status: 'failed',
            error: reason,
            dlq_seq: ack.seq,
            worker: o.nodeId,
            finished_at: new Date().toISOString(),
          },
    cur,
  )
  m.term()
  w.log.warn({ job: cur.state.id, attempts: cur.state.attempts, reason }, 'job moved to the dead letter queue')
}
