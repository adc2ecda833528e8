import type { Logger } from '../../src/kernel/log.ts'
import { partitionOf } from './hash.ts'
import { queueForKey } from './mailbox.ts'
import type { HostEnv, PartitionRun } from './partition.ts'
import type { ActorProtocol, MessageName, MessagePayload } from './protocol.ts'
import { checkMessage, sendToActor } from './send.ts'

/*
 * A message told to an actor in-process: when this host works the key's partition, the message
 * goes straight onto the key's chain — no publish, PubAck, delivery or ack, four NATS messages and
 * a stream write fewer — and is handled like a delivered one: in order with the key's other
 * messages, its state written by CAS before the turn counts as done. Whenever it is not committed
 * here (the partition stops or moved, the CAS write is refused or its outcome unknown, the
 * handler keeps failing), it is sent to the mailbox stream instead, as if it had been sent there
 * in the first place; a process that dies before either loses it, so only messages whose loss
 * something else recovers are told (a chat turn's `ended`: the chat actor's watchdog).
 */
export interface ActorTeller {
  /** Whether the message was taken in-process; false: send it (`sendToActor`). Throws for an invalid message, as a send does. */
  tell<P extends ActorProtocol, N extends MessageName<P>>(protocol: P, key: string, name: N, payload: MessagePayload<P, N>, opts?: { msgId?: string }): boolean
}

/** A teller for code built before the host starts (the job workers): tells nothing until bound to a host. */
export interface LateTeller extends ActorTeller {
  bind(host: ActorTeller | null): void
}

export function lateTeller(): LateTeller {
  let bound: ActorTeller | null = null
  return {
    bind(host) {
      bound = host
    },
    tell(protocol, key, name, payload, opts) {
      return bound?.tell(protocol, key, name, payload, opts) ?? false
    },
  }
}

/** The host's teller over the partitions it works (`runs`); `handOffs` holds the sends in flight, awaited at stop. */
export function hostTeller(env: HostEnv, runs: ReadonlyMap<string, PartitionRun>, handOffs: Set<Promise<void>>): ActorTeller {
  return {
    tell(protocol, key, name, payload, opts = {}) {
      checkMessage(protocol, key, name, payload)
      const run = runs.get(`${protocol.type}.${String(partitionOf(key, protocol.partitions))}`)
      if (run === undefined || run.stopping || performance.now() > run.validUntil) return false
      // one id for every hand-off of this message: the stream's duplicate window keeps it once
      const msgId = opts.msgId ?? crypto.randomUUID()
      let handedOff = false
      const handOff = (): void => {
        if (handedOff) return
        handedOff = true
        const sent = sendToActor(env.js, env.names, protocol, key, name, payload, { msgId }).catch((err: unknown) => lostTell(env.log, protocol.type, key, name, err))
        handOffs.add(sent)
        void sent.finally(() => handOffs.delete(sent))
      }
      queueForKey(env, run, key, { m: { ack: () => undefined, working: () => undefined, nak: handOff }, name, payload }, false)
      return true
    },
  }
}

function lostTell(log: Logger, type: string, key: string, name: string, err: unknown): void {
  log.error({ err, type, key, message: name }, 'a told actor message could not be handed to the mailbox: it is lost (what it reported is recovered by the actor itself)')
}
