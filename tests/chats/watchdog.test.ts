import t from 'tap'
import { chatProtocol } from '../../actors/protocols/chat.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import { prepareJob } from '../../src/jobs/enqueue.ts'
import { startChatActorHost } from '../helpers/chat-actor-host.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * A turn whose end never reaches its chat actor (told in-process by a worker whose process then
 * died before the actor's state was written): in a process with workers, the watchdog looks at
 * every running turn's job every QUEUE_ACK_WAIT_SECONDS — a queued turn's too, not only a local
 * one's — so the chat takes its next message seconds later, not AGENT_JOB_TIMEOUT + 60 s later.
 */
t.test("the watchdog finds a queued turn's job ended when its end was never reported", async (t) => {
  // workers in this process, every slot taken: each turn goes through the queue (not local)
  const {
    js,
    names,
    store,
    stateOf: stateOfChat,
  } = await startChatActorHost(t, 'watchdog', {
    local: { start: async () => 'full' },
    localCheck: { everyMs: 300, runs: async () => true, announceLost: async () => undefined },
  })
  const chatId = crypto.randomUUID()
  const stateOf = () => stateOfChat(chatId)
  const turn = (jobId: string) => ({
    job_id: jobId,
    content: 'hi',
    channel_id: null,
    user_id: crypto.randomUUID(),
    pool: 'agent' as const,
  })

  const first = crypto.randomUUID()
  await sendToActor(js, names, chatProtocol, chatId, 'send', turn(first))
  await eventually(
    async () => ((await stateOf())?.running?.job_id === first ? true : undefined),
    'the first turn running (queued)',
  )
  const second = crypto.randomUUID()
  await sendToActor(js, names, chatProtocol, chatId, 'send', turn(second))
  await eventually(
    async () => ((await stateOf())?.queue.length === 1 ? true : undefined),
    'the second message waiting behind it',
  )

  // the first turn's job ends, and nobody tells the chat actor
  const job = prepareJob(
    { maxDepth: 0 },
    { id: first, pool: 'agent', kind: 'agent', namespace: 'chat', name: chatId, input: {}, userId: null },
  )
  t.ok(
    (await store.create({ ...job, status: 'completed', attempts: 1, finished_at: new Date().toISOString() })) !== null,
  )
  const started = performance.now()
  await eventually(
    async () => ((await stateOf())?.running?.job_id === second ? true : undefined),
    'the second turn started by the watchdog',
  )
  const waited = performance.now() - started
  t.ok(
    waited < 5_000,
    `the chat moved on after ${String(Math.round(waited))} ms (watchdog every 300 ms; AGENT_JOB_TIMEOUT + 60 s before)`,
  )
})
