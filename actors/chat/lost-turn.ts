import type { JetStreamClient } from '@nats-io/jetstream'
import type { JobState } from '../../src/jobs/job-state.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import { publishStreamEvent } from '../../src/streaming/channel.ts'

/*
 * Here, with the chat actor, because both the actor (its watchdog finding a local turn's dead
 * worker) and the chat feature (a lost job's abandoned-turn handler) end a lost turn's stream the
 * same way, and the feature imports the actor's behaviour, never the reverse.
 */
/** Ends a lost turn's stream (if it has one) with an `error` event saying so. */
export async function announceLostTurn(d: { js: JetStreamClient; names: NatsNames }, job: JobState): Promise<void> {
  const input = job.input as { channel_id?: string | null }
  if (typeof input.channel_id === 'string')
    await publishStreamEvent(d.js, d.names, input.channel_id, {
      event: 'error',
      data: { detail: 'the worker running this turn was lost; send the message again', code: 'turn.worker_lost' },
    })
}
