import type { Static, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { Logger } from '../kernel/log.ts'
import type { NatsConnection } from './nats.ts'

export interface QueueRequestsOptions<S extends TSchema, R> {
  nc: NatsConnection
  subject: string
  schema: S
  /** The answer to a request that does not match `schema`. */
  refused: R
  log: Logger
  /** What the warning of a failed request says, and the fields that name the request. */
  failure: { msg: string; fields: (req: Static<S>) => Record<string, unknown> }
}

/**
 * Serves an actor's requests to a service on the queue group `svc` (one replica answers each):
 * the handler's result is the answer; a request that does not match the schema gets `refused`; a
 * handler that throws is logged and left unanswered, so the asking actor keeps its work due and
 * asks again (a database outage, a bug).
 */
export function serveQueueRequests<S extends TSchema, R>(
  o: QueueRequestsOptions<S, R>,
  handle: (req: Static<S>) => Promise<R>,
): { stop(): Promise<void> } {
  const sub = o.nc.subscribe(o.subject, {
    queue: 'svc',
    callback: (err, msg) => {
      if (err !== null) {
        o.log.error({ err, subject: o.subject }, 'queue request subscription failed')
        return
      }
      void (async () => {
        let req: unknown
        try {
          req = msg.json()
        } catch {
          req = null
        }
        if (!Value.Check(o.schema, req)) {
          msg.respond(JSON.stringify(o.refused))
          return
        }
        try {
          msg.respond(JSON.stringify(await handle(req)))
        } catch (e) {
          o.log.warn({ err: e, ...o.failure.fields(req) }, o.failure.msg)
        }
      })()
    },
  })
  return {
    async stop() {
      sub.unsubscribe()
    },
  }
}
