import { jetstream } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import t from 'tap'
import { chatActor, type ChatActorState } from '../../actors/chat/actor.ts'
import { chatProtocol } from '../../actors/chat/protocol.ts'
import { startActorHost } from '../../actors/runtime/host.ts'
import { provisionActors } from '../../actors/runtime/provision.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import { openJobStateStore } from '../../src/jobs/job-state.ts'
import { prepareJob } from '../../src/jobs/enqueue.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * A turn whose end never reaches its chat actor (told in-process by a worker whose process then
 * died before the actor's state was written): in a process with workers, the watchdog looks at
 * every running turn's job every QUEUE_ACK_WAIT_SECONDS — a queued turn's too, not only a local
 * one's — so the chat takes its next message seconds later, not AGENT_JOB_TIMEOUT + 60 s later.
 */
t.test("the watchdog finds a queued turn's job ended when its end was never reported", async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const nc = env.platform.nc
  const names = natsNames(env.config.NATS_PREFIX)
  const js = jetstream(nc)
  await provisionActors(nc, names, { leaseTtlMs: 3000 })
  const store = await openJobStateStore(nc, names)
  const actor = chatActor({
    enqueue: { js, names, store, maxDepth: 0 },
    store,
    agentTimeoutMs: 600_000,
    // workers in this process, every slot taken: each turn goes through the queue (not local)
    local: { start: async () => 'full' },
    localCheck: { everyMs: 300, runs: async () => true, announceLost: async () => undefined },
  })
  const host = await startActorHost({ nc, names, nodeId: 'watchdog', actors: [actor], log: createLogger({ level: 'error' }), leaseTtlMs: 3000, ackWaitMs: 2000, timerMs: 100 })
  t.teardown(() => host.stop())
  await eventually(async () => (host.owned().length === 64 ? true : undefined), 'the host to own the chat partitions')
  const states = await new Kvm(nc).open(names.bucket('ACTOR_STATE'))
  const chatId = crypto.randomUUID()
  const stateOf = async (): Promise<ChatActorState | undefined> => {
    const e = await states.get(`chat.${chatId}`)
    return e === null || e.length === 0 ? undefined : e.json<{ state: ChatActorState }>().state
  }
  const turn = (jobId: string) => ({ job_id: jobId, content: 'hi', channel_id: null, user_id: crypto.randomUUID(), pool: 'agent' as const })

  const first = crypto.randomUUID()
  await sendToActor(js, names, chatProtocol, chatId, 'send', turn(first))
  await eventually(async () => ((await stateOf())?.running?.job_id === first ? true : undefined), 'the first turn running (queued)')
  const second = crypto.randomUUID()
  await sendToActor(js, names, chatProtocol, chatId, 'send', turn(second))
  await eventually(async () => ((await stateOf())?.queue.length === 1 ? true : undefined), 'the second message waiting behind it')

  // the first turn's job ends, and nobody tells the chat actor
  const job = prepareJob({ maxDepth: 0 }, { id: first, pool: 'agent', kind: 'agent', namespace: 'chat', name: chatId, input: {}, userId: null })
  t.ok((await store.create({ ...job, status: 'completed', attempts: 1, finished_at: new Date().toISOString() })) !== null)
  const started = performance.now()
  await eventually(async () => ((await stateOf())?.running?.job_id === second ? true : undefined), 'the second turn started by the watchdog')
  const waited = performance.now() - started
  t.ok(waited < 5_000, `the chat moved on after ${String(Math.round(waited))} ms (watchdog every 300 ms; AGENT_JOB_TIMEOUT + 60 s before)`)
})
