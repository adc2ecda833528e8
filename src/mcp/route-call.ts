import type { RouteDef, RpcReply, RpcRequest } from '../api/route.ts'
import { rpcSubject } from '../api/route.ts'
import { localRoute } from '../api/local-rpc.ts'
import { decodeReply, encodeRequest } from '../api/rpc-wire.ts'
import type { Caller } from '../auth/caller.ts'
import { AppError } from '../kernel/errors.ts'
import { classifyNatsError } from '../kernel/nats-errors.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'

/*
 * An MCP tool call is the API call it stands for: the route's own handler (its permission checks
 * at execution time, input checks, timeouts, execution records) answers it, with the MCP
 * request's caller. In memory when this process serves the route (src/api/local-rpc.ts: ROLES
 * with `resources`, which the MCP route's own process has), else over NATS like the gateway.
 */
export interface RouteCallDeps {
  nc: NatsConnection
  names: NatsNames
}

export interface RouteAnswer {
  status: number
  /** The reply's JSON: the handler's body, or the platform's error body `{detail, code, errors?}`. */
  body: unknown
}

const errorBody = (reply: RpcReply): unknown =>
  reply.error === undefined
    ? reply.body
    : {
        detail: reply.error.detail,
        code: reply.error.code,
        ...(reply.error.errors === undefined ? {} : { errors: reply.error.errors }),
      }

export async function callRoute(
  d: RouteCallDeps,
  route: RouteDef,
  call: { requestId: string; caller: Caller | null; params: Record<string, string>; body: unknown },
  timeoutMs: number,
): Promise<RouteAnswer> {
  const subject = rpcSubject(d.names, route.id)
  const local = localRoute(d.nc, subject)
  if (local !== undefined) {
    const req: RpcRequest = { ...call, query: {}, clientIp: '' }
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AppError(504, 'service.timeout', 'the call did not end in time')), timeoutMs)
    })
    try {
      const reply = await Promise.race([local.answer(req), late])
      return { status: reply.status, body: errorBody(reply) }
    } finally {
      clearTimeout(timer)
    }
  }
  const out = encodeRequest(
    { requestId: call.requestId, caller: call.caller, params: call.params, query: {}, clientIp: '' },
    Buffer.from(JSON.stringify(call.body)),
  )
  const msg = await d.nc
    .request(subject, out.data, { timeout: timeoutMs, headers: out.headers })
    .catch((err: unknown) => {
      const failure = classifyNatsError(err)
      if (failure === 'no_responders' || failure === 'closed')
        throw new AppError(503, 'service.unavailable', 'no service is answering this route right now')
      if (failure === 'timeout') throw new AppError(504, 'service.timeout', 'the call did not end in time')
      throw err
    })
  const reply = decodeReply(msg.headers, msg.data)
  const text = Buffer.from(reply.data.buffer, reply.data.byteOffset, reply.data.byteLength).toString('utf8')
  return { status: reply.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) }
}
