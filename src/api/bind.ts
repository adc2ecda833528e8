import type { Static, TSchema } from '@sinclair/typebox'
import type { Principal } from '../auth/principal.ts'
import type { RouteDef, RpcReply, RpcRequest } from './route.ts'

/*
 * A handler is bound to a route (not to a bare id): it receives the route's params, query and body
 * typed from the route's schemas, already validated (by the gateway, and again by the RPC server,
 * src/api/rpc-server.ts), and the caller already resolved to a Principal. So no handler casts its
 * input or loads the caller itself.
 */

type StaticOr<R, K extends 'params' | 'query' | 'body', Fallback> = R extends { [P in K]: infer S extends TSchema }
  ? Static<S>
  : Fallback

/** `Principal` on an `auth: true` route, `null` on an open one. */
export type PrincipalFor<R extends RouteDef> = R['auth'] extends true
  ? Principal
  : R['auth'] extends false
    ? null
    : Principal | null

/** What the request carries besides its validated input; body, params and query are not here on purpose. */
export type RequestMeta = Omit<RpcRequest, 'params' | 'query' | 'body'>

export interface RouteInput<R extends RouteDef> {
  principal: PrincipalFor<R>
  params: StaticOr<R, 'params', Record<string, never>>
  /** Converted by the gateway (`?limit=5` → 5); defaults are NOT applied: optional keys may be absent. */
  query: StaticOr<R, 'query', Record<string, never>>
  body: StaticOr<R, 'body', undefined>
  request: RequestMeta
}

/**
 * A reply body already rendered: the UTF-8 bytes of its JSON, sent as they are instead of
 * `JSON.stringify` of the body (src/api/rpc-wire.ts renderReply). For a hot read that keeps its
 * rendered answer beside the cached row (the state entry read, src/states/service.ts); whoever
 * builds one promises the bytes are the JSON the route's response schema describes.
 */
export class JsonBytes {
  readonly bytes: Uint8Array
  constructor(bytes: Uint8Array) {
    this.bytes = bytes
  }
}

/** A handler's answer: status 200 unless stated; `headers` are added to the HTTP response. */
export interface RouteReply {
  status?: number
  body?: unknown
  headers?: Record<string, string>
}

export type RouteHandler<R extends RouteDef> = (input: RouteInput<R>) => Promise<RouteReply>

/** The resolved input the RPC server hands to a bound route. */
export interface ResolvedInput {
  principal: Principal | null
  params: Record<string, string>
  query: Record<string, unknown>
  body: unknown
  request: RequestMeta
}

export interface BoundRoute {
  route: RouteDef
  handle(input: ResolvedInput): Promise<RpcReply>
  /**
   * Replaces the platform's `{detail, code}` error reply for this route, for every failure: the
   * caller's resolution, input checks and the handler (the OpenAI adapter answers in OpenAI's shape).
   */
  errorReply?: (err: unknown, requestId: string) => RpcReply
}

export function bind<R extends RouteDef>(
  route: R,
  handler: RouteHandler<R>,
  options: { errorReply?: (err: unknown, requestId: string) => RpcReply } = {},
): BoundRoute {
  return {
    route,
    ...(options.errorReply === undefined ? {} : { errorReply: options.errorReply }),
    async handle(input) {
      // The RPC server checked params/query/body against these very schemas and resolved the
      // principal as `auth` says: this is the one place the checked values take their static type.
      const out = await handler(input as unknown as RouteInput<R>)
      return {
        status: out.status ?? 200,
        body: out.body,
        ...(out.headers === undefined ? {} : { headers: out.headers }),
      }
    },
  }
}
