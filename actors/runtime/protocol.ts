import type { TSchema } from '@sinclair/typebox'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'

/*
 * The wire form of an actor message, the envelope `{ "m": <name>, "p": <payload> }`, and its check
 * against the actor type's protocol (the protocol's shape: schemas/actor-protocol.ts).
 */
export interface Envelope {
  m: string
  p: unknown
}

export const encodeEnvelope = (name: string, payload: unknown): string =>
  JSON.stringify({ m: name, p: payload } satisfies Envelope)

export type Decoded = { ok: true; name: string; payload: unknown } | { ok: false; reason: string }

const decoder = new TextDecoder()

/**
 * Every message a host receives is checked against its schema: compiled once per schema (the
 * interpreted Value.Check walked the schema per message), Value.Check kept for a schema the
 * compiler refuses.
 */
const checks = new WeakMap<TSchema, (v: unknown) => boolean>()
export function checkerOf(schema: TSchema): (v: unknown) => boolean {
  let check = checks.get(schema)
  if (check === undefined) {
    try {
      const compiled = TypeCompiler.Compile(schema)
      check = (v) => compiled.Check(v)
    } catch {
      check = (v) => Value.Check(schema, v)
    }
    checks.set(schema, check)
  }
  return check
}

/** Reads an envelope and checks it against the protocol: a known name and a payload matching its schema. */
export function decodeEnvelope(protocol: ActorProtocol, data: Uint8Array): Decoded {
  let env: unknown
  try {
    env = JSON.parse(decoder.decode(data))
  } catch {
    return { ok: false, reason: 'message is not JSON' }
  }
  if (typeof env !== 'object' || env === null || typeof (env as Envelope).m !== 'string')
    return { ok: false, reason: 'message is not an actor envelope' }
  const { m, p } = env as Envelope
  const schema = Object.hasOwn(protocol.messages, m) ? protocol.messages[m] : undefined
  if (schema === undefined) return { ok: false, reason: `unknown ${protocol.type} message ${JSON.stringify(m)}` }
  if (!checkerOf(schema)(p)) return { ok: false, reason: `message ${m} does not match the actor schema` }
  return { ok: true, name: m, payload: p }
}
