import type { KV } from '@nats-io/kv'
import { AppError } from '../kernel/errors.ts'
import { cancelJob } from '../jobs/cancel.ts'
import { publishStreamEvent } from '../streaming/channel.ts'
import { openActorStates } from '../../actors/runtime/provision.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import { chatProtocol } from '../../actors/protocols/chat.ts'
import { readRunningTurn } from './running-turn.ts'
import { TURN_CANCELLED } from './turn-error.ts'
import type { ChatHandlerDeps } from './service.ts'

/*
 * A chat's owner stops the turn running in it (`POST /chats/{id}/cancel`): the running turn's job
 * (read from the chat actor's state, running-turn.ts) is cancelled the way the admin's queue cancel
 * does it (src/jobs/cancel.ts). The worker running the turn aborts it: the turn ends as an
 * abandoned stream does (run-turn.ts), its stream with an `error` event (`chat.turn_cancelled`),
 * what it wrote so far kept (the user's message; the reply being streamed is not), and its chat
 * told it ended, which starts the next queued message. Turns queued behind it stay queued.
 */
export type CancelAnswer = { status: 'cancelled'; job_id: string } | { status: 'idle' }

export function turnCanceller(d: ChatHandlerDeps): (chatId: string) => Promise<CancelAnswer> {
  let states: Promise<KV> | undefined
  const kv = (): Promise<KV> => {
    if (states === undefined) {
      const opening = openActorStates(d.nc, d.names)
      // a failed open is tried again by the next request
      opening.catch(() => {
        if (states === opening) states = undefined
      })
      states = opening
    }
    return states
  }
  return async (chatId) => {
    const running = await readRunningTurn(await kv(), chatId)
    if (running === null) return { status: 'idle' }
    let cancelled
    try {
      cancelled = await cancelJob({ nc: d.nc, names: d.names, db: d.db, store: d.jobStore }, running.job_id)
    } catch (err) {
      // ended meanwhile (its end not yet in the actor's state), or gone: nothing runs
      if (err instanceof AppError && (err.code === 'job.already_finished' || err.code === 'job.not_found'))
        return { status: 'idle' }
      throw err
    }
    if (cancelled.waiting) {
      // Still a message in JOBS (no worker was free): no run will end it, so what a run's end does
      // is done here — its stream ended, its chat told (else the chat would wait for its watchdog).
      const channelId = (cancelled.state.input as { channel_id?: string | null } | null)?.channel_id
      if (typeof channelId === 'string')
        await publishStreamEvent(d.js, d.names, channelId, { event: 'error', data: { ...TURN_CANCELLED } })
      const ended = { job_id: running.job_id }
      const msgId = `chat-ended-${running.job_id}`
      // in-process when this process works the chat's partition, committed before the answer
      await (d.actorsHere?.tellDurably(chatProtocol, chatId, 'ended', ended, { msgId }) ??
        sendToActor(d.js, d.names, chatProtocol, chatId, 'ended', ended, { msgId }))
    }
    return { status: 'cancelled', job_id: running.job_id }
  }
}
