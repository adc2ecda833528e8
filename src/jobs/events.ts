import { EXECUTION_EVENT_SCHEMA, type ExecutionEvent } from '../../schemas/job.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { jobErrorOf, jobErrorText, type JobState } from './job-state.ts'

/*
 * The public execution events: every job state change is published on
 * `events.execution.<namespace>.<name>.<status>` (stream EVENTS, 24 h) so a backend service can
 * subscribe with any NATS client, live (core subscription) or durably (a consumer on EVENTS).
 * The payload is versioned by `schema`; a breaking change gets a new version and both are
 * published for a deprecation period. Delivery is at least once; `revision` orders the events of
 * one execution, and `Nats-Msg-Id` = `<execution_id>:<revision>` lets JetStream drop duplicates.
 */
export { EXECUTION_EVENT_SCHEMA, type ExecutionEvent } from '../../schemas/job.ts'

export const executionEventSubject = (names: NatsNames, s: Pick<JobState, 'namespace' | 'name' | 'status'>): string =>
  names.subject(`events.execution.${s.namespace}.${s.name}.${s.status}`)

export function executionEvent(s: JobState, revision: number): ExecutionEvent {
  const duration =
    s.started_at !== null && s.finished_at !== null ? Date.parse(s.finished_at) - Date.parse(s.started_at) : null
  return {
    schema: EXECUTION_EVENT_SCHEMA,
    execution_id: s.id,
    revision,
    pool: s.pool,
    kind: s.kind,
    namespace: s.namespace,
    name: s.name,
    status: s.status,
    attempt: s.attempts,
    user_id: s.user_id,
    trigger_type: s.trigger_type,
    trigger_id: s.trigger_id,
    chat_id: s.chat_id,
    parent_id: s.parent_id,
    error: jobErrorText(s.error),
    error_code: jobErrorOf(s.error)?.code ?? null,
    ...(s.status === 'completed' && s.result_stored !== true ? { result: s.result ?? null } : {}),
    created_at: s.created_at,
    started_at: s.started_at,
    finished_at: s.finished_at,
    duration_ms: duration,
  }
}
