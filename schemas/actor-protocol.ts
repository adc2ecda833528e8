import type { Static, TSchema } from '@sinclair/typebox'

/*
 * An actor type's protocol: what a sender needs to know and nothing more — the type, its partition
 * count and its named messages, each with a TypeBox schema. It lives here, in the base layer, so
 * the protocol files (actors/protocols/) import only typebox and schemas/: any sender, the gateway
 * or a feature, can import them without an actor's implementation or the actor runtime.
 *
 * On the wire a message is the envelope `{ "m": <name>, "p": <payload> }` (actors/runtime/protocol.ts).
 */
export interface ActorProtocol {
  readonly type: string
  /** Fixed for the life of the ACTORS stream: changing it means draining and re-partitioning. */
  readonly partitions: number
  readonly messages: Readonly<Record<string, TSchema>>
}

export type MessageName<P extends ActorProtocol> = keyof P['messages'] & string
export type MessagePayload<P extends ActorProtocol, N extends MessageName<P>> = Static<P['messages'][N]>
