import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream'
import { errors } from '@nats-io/transport-node'

/*
 * NATS failures classified by the client's own error classes (never by matching messages, which
 * change between client versions): the one place that knows how nats.js reports them.
 */
export type NatsFailure = 'no_responders' | 'timeout' | 'closed' | 'cas_conflict'

export function classifyNatsError(err: unknown): NatsFailure | null {
  if (err instanceof errors.NoRespondersError) return 'no_responders'
  // request() wraps everything but a timeout in a RequestError whose cause is the real error
  if (err instanceof errors.RequestError)
    return err.isNoResponders() ? 'no_responders' : (classifyNatsError(err.cause) ?? 'closed')
  if (err instanceof errors.TimeoutError) return 'timeout'
  if (err instanceof errors.ClosedConnectionError || err instanceof errors.DrainingConnectionError) return 'closed'
  if (isCasConflict(err)) return 'cas_conflict'
  return null
}

/** The server's answer to a write with a stale expected revision (KV update/create, err_code 10071). */
export function isCasConflict(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
      err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  )
}

/**
 * NATS failing under a request rather than the request failing: no responder, no answer in time, a
 * connection closing, or JetStream answering 503 (a stream without a leader while its cluster
 * elects one, after a server died). A handler that meets one answers 503 and the client retries;
 * follows `cause` (the platform wraps some of them).
 */
export function isNatsUnavailable(err: unknown, depth = 0): boolean {
  const failure = classifyNatsError(err)
  if (failure === 'no_responders' || failure === 'timeout' || failure === 'closed') return true
  if (err instanceof JetStreamApiError && err.status === 503) return true
  const cause = err instanceof Error ? err.cause : undefined
  return cause !== undefined && depth < 3 ? isNatsUnavailable(cause, depth + 1) : false
}
