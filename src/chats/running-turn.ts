import type { KV } from '@nats-io/kv'
import { Value } from '@sinclair/typebox/value'
import { chatProtocol, ChatRunningTurn } from '../../actors/protocols/chat.ts'
import { stateKeyOf, type Stored } from '../../actors/runtime/partition.ts'

/*
 * Reading which turn a chat's actor runs, from outside the actor (read-only): ACTOR_STATE key
 * `chat.<chat id>`, value `{ state, timers }`, the way the pool admin endpoints read a pool actor's
 * desired state (sandbox/pool-desired.ts). The actor writes its state by CAS before it acks a
 * message, so what is read holds every message it has handled; one it has not handled yet (a send
 * still in the mailbox stream) is not seen. The runtime has no request/reply to an actor, and
 * this needs none: one KV get, no new store.
 */
export async function readRunningTurn(states: KV, chatId: string): Promise<ChatRunningTurn | null> {
  const e = await states.get(stateKeyOf(chatProtocol.type, chatId))
  if (e === null || e.operation !== 'PUT' || e.length === 0) return null
  const running = (e.json<Stored>().state as { running?: unknown } | null)?.running
  return Value.Check(ChatRunningTurn, running) ? running : null
}
