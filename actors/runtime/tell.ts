import type { Logger } from '../../src/kernel/log.ts'
import { partitionOf } from './hash.ts'
import { queueForKey } from './mailbox.ts'
import type { HostEnv, PartitionRun } from './partition.ts'
import type { ActorProtocol, MessageName, MessagePayload } from '../../schemas/actor-protocol.ts'
import { checkMessage, sendToActor } from './send.ts'

/*
 * A message told to an actor in-process: when this host works the key's partition, the message
 * goes straight onto the key's chain — no publish, PubAck, delivery or ack, four NATS messages and
 * a stream write fewer — and is handled like a delivered one: in order with the key's other
 * messages, its state written by CAS before the turn counts as done. Whenever it is not committed
 * here (the partition stops or moved, the CAS write is refused or its outcome unknown, the
 * handler keeps failing), it is sent to the mailbox stream instead, as if it had been sent there
 * in the first place.
 *
 * `tell` does not wait: a process that dies before either loses the message, so only messages
 * whose loss something else recovers are told that way (a chat turn's `ended`: the chat actor's
 * watchdog). `tellDurably` answers once the message is committed here or stored in the stream —
 * as durable as `sendToActor`'s PubAck, which is what a sender that answers its own caller
 * afterwards needs (a chat message: the user's HTTP request).
 *
 * Only a partition that has caught up with its mailbox takes told messages (`caughtUp`): right
 * after this host took it over, messages sent to the stream earlier — by this process too, before
 * it worked the partition — may still wait for delivery, and a told one must not overtake them.
 */
export interface ActorTeller {
  /** Whether the message was taken in-process; false: send it (`sendToActor`). Throws for an invalid message, as a send does. */
  tell<P extends ActorProtocol, N extends MessageName<P>>(
    protocol: P,
    key: string,
    name: N,
    payload: MessagePayload<P, N>,
    opts?: { msgId?: string },
  ): boolean
  /**
   * Null when not taken in-process (send it); else settled once the message is durable: committed
   * by the actor here, or stored in the mailbox stream when it was handed there (rejected when
   * that send failed, as `sendToActor` would have). `fresh`: as `sendToActor`'s (nothing is read
   * for a key its sender has just made).
   */
  tellDurably<P extends ActorProtocol, N extends MessageName<P>>(
    protocol: P,
    key: string,
    name: N,
    payload: MessagePayload<P, N>,
    opts?: { msgId?: string; fresh?: boolean },
  ): Promise<void> | null
}

/** A teller for code built before the host starts (the job workers, the services): tells nothing until bound to a host. */
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
    tellDurably(protocol, key, name, payload, opts) {
      return bound?.tellDurably(protocol, key, name, payload, opts) ?? null
    },
  }
}

/** The host's teller over the partitions it works (`runs`); `handOffs` holds the sends in flight, awaited at stop. */
export function hostTeller(
  env: HostEnv,
  runs: ReadonlyMap<string, PartitionRun>,
  handOffs: Set<Promise<void>>,
): ActorTeller {
  const told = <P extends ActorProtocol, N extends MessageName<P>>(
    protocol: P,
    key: string,
    name: N,
    payload: MessagePayload<P, N>,
    opts: { msgId?: string; fresh?: boolean },
  ): Promise<void> | null => {
    checkMessage(protocol, key, name, payload)
    const run = runs.get(`${protocol.type}.${String(partitionOf(key, protocol.partitions))}`)
    if (run === undefined || run.stopping || !run.caughtUp || performance.now() > run.validUntil) return null
    // one id for every hand-off of this message: the stream's duplicate window keeps it once
    const msgId = opts.msgId ?? crypto.randomUUID()
    let settled = false
    let durable!: () => void
    let failed!: (err: unknown) => void
    const outcome = new Promise<void>((resolve, reject) => {
      durable = resolve
      failed = reject
    })
    const handOff = (): void => {
      if (settled) return
      settled = true
      const sent = sendToActor(env.js, env.names, protocol, key, name, payload, { msgId }).then(durable, failed)
      handOffs.add(sent)
      void sent.finally(() => handOffs.delete(sent))
    }
    const committed = (): void => {
      if (settled) return
      settled = true
      durable()
    }
    queueForKey(
      env,
      run,
      key,
      { m: { ack: committed, working: () => undefined, nak: handOff }, name, payload },
      opts.fresh === true,
    )
    return outcome
  }
  return {
    tell(protocol, key, name, payload, opts = {}) {
      const outcome = told(protocol, key, name, payload, opts)
      // nobody waits for it: its loss is logged, and recovered by the actor itself
      outcome?.catch((err: unknown) => lostTell(env.log, protocol.type, key, name, err))
      return outcome !== null
    },
    tellDurably: (protocol, key, name, payload, opts = {}) => told(protocol, key, name, payload, opts),
  }
}

function lostTell(log: Logger, type: string, key: string, name: string, err: unknown): void {
  log.error(
    { err, type, key, message: name },
    'a told actor message could not be handed to the mailbox: it is lost (what it reported is recovered by the actor itself)',
  )
}
