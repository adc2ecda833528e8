import { jetstreamManager } from '@nats-io/jetstream'
import t from 'tap'
import { chatProtocol } from '../../actors/protocols/chat.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import { findQueuedJob } from '../../src/jobs/enqueue.ts'
import { startChatActorHost } from '../helpers/chat-actor-host.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * The message count a chat actor vouches for to a turn (whose worker then reads nothing when it
 * holds that many, src/chats/history-cache.ts): the count the previous turn ended with, handed to
 * the next turn's job; forgotten on a resume (a sub-agent's answer written from outside any turn),
 * when a resume waits behind the turn that reports it, and when a turn ends without one.
 */
t.test(
  'the chat actor hands the last turn’s message count to the next turn, and forgets it when it may be wrong',
  async (t) => {
    // every turn through the queue (no workers), so each one's job and its input are in JOBS
    const { nc, js, names, stateOf: stateOfChat } = await startChatActorHost(t, 'vouch')
    const chatId = crypto.randomUUID()
    const stateOf = () => stateOfChat(chatId)
    const running = async (jobId: string) =>
      eventually(async () => ((await stateOf())?.running?.job_id === jobId ? true : undefined), `turn ${jobId} running`)
    const jsm = await jetstreamManager(nc)
    /** The job's input as queued (a queued job is its message in JOBS until a worker claims it). */
    const countGiven = async (jobId: string) =>
      ((await findQueuedJob(jsm, names, jobId))?.input as { message_count?: number } | undefined)?.message_count
    const user = crypto.randomUUID()
    const send = (jobId: string, extra: { resume?: boolean } = {}) =>
      sendToActor(js, names, chatProtocol, chatId, 'send', {
        job_id: jobId,
        ...(extra.resume === true ? {} : { content: 'hi' }),
        channel_id: null,
        user_id: user,
        pool: 'agent',
        ...extra,
      })
    const ended = (jobId: string, count?: number) =>
      sendToActor(js, names, chatProtocol, chatId, 'ended', {
        job_id: jobId,
        ...(count === undefined ? {} : { message_count: count }),
      })
    const queued = async (n: number) =>
      eventually(async () => ((await stateOf())?.queue.length === n ? true : undefined), `${String(n)} waiting`)

    const a = crypto.randomUUID()
    await send(a)
    await running(a)
    t.ok((await findQueuedJob(jsm, names, a)) !== null, 'the turn is queued')
    t.equal(await countGiven(a), undefined, 'a first turn: nothing to vouch for')

    const b = crypto.randomUUID()
    await send(b)
    await queued(1)
    await ended(a, 2)
    await running(b)
    t.equal(await countGiven(b), 2, 'the next turn gets the count the last one ended with')

    // a sub-agent's answer is written and its resume sent while b runs; b reports a count from before that
    const c = crypto.randomUUID()
    await send(c, { resume: true })
    await queued(1)
    await ended(b, 4)
    await running(c)
    t.equal(await countGiven(c), undefined, 'a resume waiting behind the turn: its count is not vouched for')
    t.equal((await stateOf())?.message_count, undefined)

    // the resume turn reports one; a resume arriving while nothing runs forgets it
    await ended(c, 6)
    await eventually(
      async () => ((await stateOf())?.message_count === 6 ? true : undefined),
      'the count kept while idle',
    )
    const d = crypto.randomUUID()
    await send(d, { resume: true })
    await running(d)
    t.equal(await countGiven(d), undefined, 'a resume: the answer was written outside any turn')

    // a turn that ends without a count (suspended, a write of unknown outcome) leaves none
    const e = crypto.randomUUID()
    await send(e)
    await queued(1)
    await ended(d)
    await running(e)
    t.equal(await countGiven(e), undefined, 'ended without a count: none for the next')
  },
)
