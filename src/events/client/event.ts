import { TypeCompiler } from '@sinclair/typebox/compiler'
import '../../../schemas/formats.ts'
import { EXECUTION_EVENT_SCHEMA, ExecutionEvent } from '../../../schemas/job.ts'

/*
 * The payload of `events.execution.<namespace>.<name>.<status>` as the client hands it to a
 * handler: checked against the published schema (`platform.execution.v1`, schemas/job.ts), so a
 * handler gets a typed event or never sees the message.
 */
export { EXECUTION_EVENT_SCHEMA, type ExecutionEvent } from '../../../schemas/job.ts'

export type ParsedEvent =
  | { kind: 'event'; event: ExecutionEvent }
  /** Another version of the payload (a later `schema`): not this client's to handle. */
  | { kind: 'other-schema'; schema: string }
  | { kind: 'invalid'; reason: string }

const decoder = new TextDecoder()
// compiled once (the formats, `uuid` among them, registered by schemas/formats.ts)
const check = TypeCompiler.Compile(ExecutionEvent)

export function parseExecutionEvent(data: Uint8Array): ParsedEvent {
  let value: unknown
  try {
    value = JSON.parse(decoder.decode(data))
  } catch {
    return { kind: 'invalid', reason: 'not JSON' }
  }
  if (typeof value !== 'object' || value === null) return { kind: 'invalid', reason: 'not an object' }
  const schema = (value as { schema?: unknown }).schema
  if (typeof schema === 'string' && schema !== EXECUTION_EVENT_SCHEMA) return { kind: 'other-schema', schema }
  if (!check.Check(value))
    return {
      kind: 'invalid',
      reason: [...check.Errors(value)]
        .slice(0, 5)
        .map((e) => `${e.path === '' ? '/' : e.path} ${e.message}`)
        .join('; '),
    }
  return { kind: 'event', event: value }
}

/**
 * The default de-duplication key of an event: its execution and the state change it reports.
 * `revision` (the JOB_STATE revision) grows with every change of one execution, so the
 * `running` and `completed` events of one execution — and the `running` of a retry — have
 * different keys, while every copy of one event (a redelivery, a republish, a replay) has the
 * same one. It is also the publisher's `Nats-Msg-Id`, with a `.` for the `:` (a key for NATS KV too).
 */
export const executionEventKey = (e: Pick<ExecutionEvent, 'execution_id' | 'revision'>): string =>
  `${e.execution_id}.${String(e.revision)}`
