import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node'
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { Principal } from '../auth/principal.ts'
import { AppError, toAppError, unauthorized, unavailable } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { isDatabaseUnavailable } from '../platform/db.ts'
import { isNatsUnavailable } from '../kernel/nats-errors.ts'
import { startSpan, tracing } from '../platform/tracing.ts'
import type { BoundRoute } from './bind.ts'
import type { Caller } from '../auth/caller.ts'
import { rpcSubject, type RouteDef, type RpcReply, type RpcRequest } from './route.ts'
import { registerLocalRoute } from './local-rpc.ts'
import { decodeRequest, encodeReply } from './rpc-wire.ts'

/** Turns the gateway's verified caller into the principal handlers see (src/auth/principal.ts loadPrincipal). */
export type PrincipalResolver = (caller: Caller) => Promise<Principal>

interface Checks {
  params: TypeCheck<TSchema> | undefined
  query: TypeCheck<TSchema> | undefined
  body: TypeCheck<TSchema> | undefined
  /** `blob: 'upload'`: a call may be a streamed upload's phase, without a body. */
  upload: boolean
}

const compileChecks = (r: RouteDef): Checks => ({
  params: r.params === undefined ? undefined : TypeCompiler.Compile(r.params),
  query: r.query === undefined ? undefined : TypeCompiler.Compile(r.query),
  body: r.body === undefined ? undefined : TypeCompiler.Compile(r.body),
  upload: r.blob === 'upload',
})

const invalidInput = (what: string, check: TypeCheck<TSchema>, value: unknown): AppError =>
  new AppError(422, 'request.invalid', `invalid ${what}`, {
    issues: [...check.Errors(value)]
      .slice(0, 20)
      .map((e) => ({ path: e.path.replace(/^\//, '').replace(/\//g, '.'), message: e.message })),
  })

/**
 * Checks the input against the route's schemas once more. The gateway already did, with the same
 * schemas, so over HTTP this never fails; it is here because a route can also be reached straight
 * over NATS (another service, a test), and a handler's typed input must hold whoever called.
 * The compiled checks cost microseconds. The query is checked only when it has keys, exactly as
 * the gateway does (an empty query string is never validated there).
 */
function checkInput(c: Checks, req: RpcRequest): void {
  if (!c.upload) delete req.blob
  if (c.params !== undefined && !c.params.Check(req.params)) throw invalidInput('path parameters', c.params, req.params)
  if (c.query !== undefined && Object.keys(req.query).length > 0 && !c.query.Check(req.query))
    throw invalidInput('query parameters', c.query, req.query)
  // a streamed upload's phases carry no body (the bytes went to the object store): the handler checks `request.blob`
  if (c.body !== undefined && (req.blob === undefined || req.body !== undefined) && !c.body.Check(req.body))
    throw invalidInput('body', c.body, req.body)
}

/** Decodes a NATS request, answers it, responds on the message. */
async function respondTo(
  msg: Msg,
  answer: RouteAnswer,
  page: boolean,
  errorReply: BoundRoute['errorReply'],
): Promise<void> {
  let reply: RpcReply
  try {
    reply = await answer(decodeRequest(msg.headers, msg.data))
  } catch (e) {
    // only decoding throws (answer never does): a request that did not come from a gateway
    const appErr = toAppError(e)
    reply = errorReply?.(e, '') ?? { status: appErr.status, error: appErr.toWire() }
  }
  const out = encodeReply(reply, page)
  msg.respond(out.data, { headers: out.headers })
}

/**
 * The reply with an API key's owner, for the gateway's request log (it only has the key's hash). A
 * function of the module, not a closure made per request: the TypeScript loader names every
 * closure it sees assigned (a property definition each time).
 */
function named(reply: RpcReply, principal: Principal | null, req: RpcRequest): RpcReply {
  return principal !== null && req.caller?.via === 'api_key' ? { ...reply, userId: principal.userId } : reply
}

/** What one served route answers for a decoded request: never throws (an error is a reply). */
export type RouteAnswer = (req: RpcRequest) => Promise<RpcReply>

/**
 * Serves bound routes over NATS request/reply. Every process serving a route joins the same queue
 * group, so replicas share the load and any one of them may die without losing the route. The
 * caller is resolved here, once per request, with the one `principal` resolver: an `auth` route
 * without a caller answers 401, and without a resolver (no database in this process) `auth` routes
 * are not served at all.
 *
 * Each served route is also registered for this process's gateway (src/api/local-rpc.ts): when the
 * gateway and the service share a NATS connection (ROLES=all, `npm start`), the gateway hands the
 * request to the route here, in memory, and skips the NATS round trip. The handler, the input
 * checks and the principal are the same either way. RPC_IN_PROCESS=false turns it off: every
 * request then goes over NATS and the queue group spreads them over all service processes.
 */
export function serveRpc(options: {
  nc: NatsConnection
  names: NatsNames
  routes: readonly BoundRoute[]
  principal?: PrincipalResolver
  log: Logger
  inProcess?: boolean
}): { close(): Promise<void> } {
  const { nc, log, principal: resolve } = options
  const subs: Subscription[] = []
  const local: (() => void)[] = []
  let served = 0
  for (const bound of options.routes) {
    const { route } = bound
    const id = route.id
    if (route.auth && resolve === undefined) {
      log.warn({ route: id }, 'route needs a principal but this process has no resolver: not served')
      continue
    }
    const checks = compileChecks(route)
    const handle: RouteAnswer = async (req) => {
      let principal: Principal | null = null
      try {
        if (route.auth) {
          if (req.caller === null || resolve === undefined) throw unauthorized()
          principal = await resolve(req.caller)
        }
        checkInput(checks, req)
        const { params, query, body, ...request } = req
        return named(await bound.handle({ principal, params, query, body, request }), principal, req)
      } catch (e) {
        if (bound.errorReply !== undefined) return named(bound.errorReply(e, req.requestId), principal, req)
        // a database outage is the platform being unavailable, not a failure of this request
        // and so is NATS failing under the handler (a hub server lost, a stream electing its leader)
        const appErr = isDatabaseUnavailable(e)
          ? unavailable('the database is unavailable right now; retry shortly', 'service.database_unavailable')
          : !(e instanceof AppError) && isNatsUnavailable(e)
            ? unavailable('the message bus is unavailable right now; retry shortly')
            : toAppError(e)
        if (appErr.status >= 500) log.error({ err: e, route: id, requestId: req.requestId }, 'rpc handler failed')
        return named(
          {
            status: appErr.status,
            error: appErr.toWire(),
            ...(appErr.headers === undefined ? {} : { headers: appErr.headers }),
          },
          principal,
          req,
        )
      }
    }
    // tracing on: the handler runs in the route's span, a child of the gateway's (src/platform/tracing.ts)
    const answer: RouteAnswer = (req) => (tracing.on ? traced(id, req, handle) : handle(req))
    const page = route.html === true
    const subject = rpcSubject(options.names, id)
    served++
    if (options.inProcess !== false) local.push(registerLocalRoute(nc, subject, { answer, page }))
    subs.push(
      nc.subscribe(subject, {
        queue: 'rpc',
        callback: (err, msg) => {
          if (err !== null) {
            log.error({ err, route: id }, 'rpc subscription failed')
            return
          }
          void respondTo(msg, answer, page, bound.errorReply)
        },
      }),
    )
  }
  log.info({ routes: served }, 'rpc handlers subscribed')
  return {
    async close() {
      for (const unregister of local) unregister()
      for (const s of subs) s.unsubscribe()
    },
  }
}

/** Answers `req` in a span named by the route id (SERVER: the service's side of the gateway's call). */
async function traced(id: string, req: RpcRequest, handle: RouteAnswer): Promise<RpcReply> {
  const span = startSpan(id, {
    kind: 'server',
    parent: req.traceparent,
    attributes: { 'rpc.system': 'nats', 'rpc.method': id, 'http.request.id': req.requestId },
  })
  if (span === undefined) return handle(req)
  try {
    const reply = await span.run(() => handle(req))
    span.setAttribute('http.response.status_code', reply.status)
    if (reply.status >= 500) span.fail(new Error(reply.error?.detail ?? `status ${String(reply.status)}`))
    return reply
  } finally {
    span.end()
  }
}
