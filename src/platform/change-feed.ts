import type { TypeCheck } from '@sinclair/typebox/compiler'
import type { TSchema, Static } from '@sinclair/typebox'
import type { Subscription } from '@nats-io/transport-node'
import type { NatsConnection } from './nats.ts'

/*
 * What the in-memory caches that NATS keeps coherent share (src/resources/row-cache.ts,
 * src/states/entry-cache.ts, src/auth/principal-cache.ts): the subscription to their change
 * subject, and forgetting everything when the connection has a gap.
 */

/**
 * Follows a change subject: each message parsed as JSON and checked against `check`; malformed
 * ones and this process's own (`o === origin`: it applied them before publishing) are skipped.
 * `apply` runs synchronously as the message is parsed, before any later message on the connection
 * (the read-your-writes argument of the caches rests on that).
 */
export function followChanges<S extends TSchema>(
  nc: NatsConnection,
  subject: string,
  check: TypeCheck<S>,
  origin: string,
  apply: (change: Static<S>) => void,
): Subscription {
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err !== null) return
      let change: unknown
      try {
        change = msg.json()
      } catch {
        return
      }
      if (!check.Check(change) || (change as { o?: unknown }).o === origin) return
      apply(change)
    },
  })
}

/**
 * Runs `forget` when the connection drops and again when it is back: changes published while a
 * process was cut off never reach it. `state` says which (a cache may stop filling while down).
 */
export function onConnectionGap(nc: NatsConnection, forget: (state: 'disconnect' | 'reconnect') => void): void {
  void (async () => {
    for await (const st of nc.status()) if (st.type === 'disconnect' || st.type === 'reconnect') forget(st.type)
  })().catch(() => undefined)
}
