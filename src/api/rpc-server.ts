import type { NatsConnection, Subscription } from '@nats-io/transport-node'
import { toAppError, unavailable } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { isDatabaseUnavailable } from '../platform/db.ts'
import { rpcSubject, type RpcHandler } from './route.ts'
import { decodeRequest, encodeReply } from './rpc-wire.ts'


/**
 * Serves route handlers over NATS request/reply. Every process serving a route joins the same
 * queue group, so replicas share the load and any one of them may die without losing the route.
 */
export function serveRpc(options: { nc: NatsConnection; names: NatsNames; handlers: ReadonlyMap<string, RpcHandler>; log: Logger }): { close(): Promise<void> } {
  const { nc, log } = options
  const subs: Subscription[] = []
  for (const [id, handler] of options.handlers) {
    subs.push(
      nc.subscribe(rpcSubject(options.names, id), {
        queue: 'rpc',
        callback: (err, msg) => {
          if (err !== null) {
            log.error({ err, route: id }, 'rpc subscription failed')
            return
          }
          void (async () => {
            let requestId = ''
            try {
              const req = decodeRequest(msg.headers, msg.data)
              requestId = req.requestId
              const reply = await handler(req)
              const out = encodeReply(reply)
              msg.respond(out.data, { headers: out.headers })
            } catch (e) {
              // a database outage is the platform being unavailable, not a failure of this request
              const appErr = isDatabaseUnavailable(e) ? unavailable('the database is unavailable right now; retry shortly', 'service.database_unavailable') : toAppError(e)
              if (appErr.status >= 500) log.error({ err: e, route: id, requestId }, 'rpc handler failed')
              const out = encodeReply({ status: appErr.status, error: appErr.toWire(), ...(appErr.headers === undefined ? {} : { headers: appErr.headers }) })
              msg.respond(out.data, { headers: out.headers })
            }
          })()
        },
      }),
    )
  }
  log.info({ routes: options.handlers.size }, 'rpc handlers subscribed')
  return {
    async close() {
      for (const s of subs) s.unsubscribe()
    },
  }
}
