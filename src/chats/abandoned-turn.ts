import type { JetStreamClient } from '@nats-io/jetstream'
import type { JobState } from '../jobs/job-state.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import { chatProtocol } from '../../actors/protocols/chat.ts'
import { announceLostTurn } from '../../actors/chat/lost-turn.ts'

/**
 * A turn whose worker died (the job system marked its job failed): its stream ends with an `error`
 * event and its chat is told the turn ended, which frees it for the next message.
 */
export function chatAbandonedTurnHandler(d: {
  js: JetStreamClient
  names: NatsNames
}): (job: JobState) => Promise<void> {
  return async (job) => {
    const input = job.input as { chat_id?: string }
    await announceLostTurn(d, job)
    if (typeof input.chat_id === 'string')
      await sendToActor(
        d.js,
        d.names,
        chatProtocol,
        input.chat_id,
        'ended',
        { job_id: job.id },
        { msgId: `chat-ended-${job.id}` },
      )
  }
}
