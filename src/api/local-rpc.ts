import type { NatsConnection } from '@nats-io/transport-node'
import type { RpcReply, RpcRequest } from './route.ts'

/*
 * The routes this process serves (src/api/rpc-server.ts), findable by the gateway of the same
 * process. A gateway in a process that also runs the service (ROLES=all: `npm start`, one
 * replica of a small deployment) hands a request to the route in memory instead of over NATS
 * request/reply: no encoding into NATS headers, no two socket writes and reads, no nats-server
 * work — measured as about half of a warm resource read's CPU (bench/gateway.bench.ts).
 *
 * Keyed by the NATS connection, so only a gateway and a service sharing one connection (the
 * same process, the same NATS prefix) find each other; everything else keeps going over NATS,
 * which is also what spreads load across replicas in a split deployment.
 */
export interface LocalRoute {
  /** Answers a request; never throws (an error is a reply), like the NATS subscription. */
  answer: (req: RpcRequest) => Promise<RpcReply>
  /** RouteDef.html: the 200 body is a page's text. */
  page: boolean
}

const byConnection = new WeakMap<NatsConnection, Map<string, LocalRoute>>()

/** Registers the route at `subject`; returns its removal (at shutdown, before the subscription ends). */
export function registerLocalRoute(nc: NatsConnection, subject: string, route: LocalRoute): () => void {
  let routes = byConnection.get(nc)
  if (routes === undefined) byConnection.set(nc, (routes = new Map()))
  routes.set(subject, route)
  return () => {
    if (routes.get(subject) === route) routes.delete(subject)
  }
}

/** The route served in this process on `nc` at `subject`, if any. */
export function localRoute(nc: NatsConnection, subject: string): LocalRoute | undefined {
  return byConnection.get(nc)?.get(subject)
}
