/*
 * `agent-platform/events` (package.json "exports"): the typed client a backend service reads the
 * platform's execution events with. Guide: docs/events-client.md.
 */
export {
  subscribeExecutionEvents,
  type ErrorReport,
  type EventHandler,
  type EventMeta,
  type ExecutionEventSubscription,
  type SubscribeOptions,
  type SubscriptionStats,
} from './subscribe.ts'
export { resetDurable, type ResetOptions } from './reset.ts'
export { memoryDedupe, type DedupeStore } from './dedupe.ts'
export { fileDedupe, type FileDedupeOptions } from './file-dedupe.ts'
export { EXECUTION_EVENT_SCHEMA, executionEventKey, type ExecutionEvent } from './event.ts'
export type { StartAt } from './durable.ts'
export type { NatsCredentials } from './connect.ts'
