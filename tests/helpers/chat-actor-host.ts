import { jetstream, type JetStreamClient } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import type { Test } from 'tap'
import { chatActor, type ChatActorDeps, type ChatActorState } from '../../actors/chat/actor.ts'
import { startActorHost, type ActorHost } from '../../actors/runtime/host.ts'
import { provisionActors } from '../../actors/runtime/provision.ts'
import { openJobStateStore, type JobStateStore } from '../../src/jobs/job-state.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames, type NatsNames } from '../../src/platform/nats-names.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import { startTestPlatform } from './env.ts'
import { eventually } from './eventually.ts'

/*
 * A chat actor alone on an actor host of its own, over a test platform's NATS (no workers): for
 * tests of the actor's protocol. `local` / `localCheck` as the test needs them; the host owns all
 * 64 chat partitions before this returns; `stateOf` reads a chat's committed actor state.
 */
export interface ChatActorHarness {
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  store: JobStateStore
  host: ActorHost
  stateOf(chatId: string): Promise<ChatActorState | undefined>
}

export async function startChatActorHost(
  t: Test,
  nodeId: string,
  deps: Pick<ChatActorDeps, 'local' | 'localCheck'> = {},
): Promise<ChatActorHarness> {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const nc = env.platform.nc
  const names = natsNames(env.config.NATS_PREFIX)
  const js = jetstream(nc)
  await provisionActors(nc, names, { leaseTtlMs: 3000 })
  const store = await openJobStateStore(nc, names)
  const actor = chatActor({ enqueue: { js, names, store, maxDepth: 0 }, store, agentTimeoutMs: 600_000, ...deps })
  const host = await startActorHost({
    nc,
    names,
    nodeId,
    actors: [actor],
    log: createLogger({ level: 'error' }),
    leaseTtlMs: 3000,
    ackWaitMs: 2000,
    timerMs: 100,
  })
  t.teardown(() => host.stop())
  await eventually(async () => (host.owned().length === 64 ? true : undefined), 'the host to own the chat partitions')
  const states = await new Kvm(nc).open(names.bucket('ACTOR_STATE'))
  const stateOf = async (chatId: string): Promise<ChatActorState | undefined> => {
    const e = await states.get(`chat.${chatId}`)
    return e === null || e.length === 0 ? undefined : e.json<{ state: ChatActorState }>().state
  }
  return { nc, js, names, store, host, stateOf }
}
