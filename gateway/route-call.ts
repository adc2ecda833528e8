import type { NatsConnection } from '@nats-io/transport-node'
import { localRoute, type LocalRoute } from '../src/api/local-rpc.ts'
import type { RpcRequest } from '../src/api/route.ts'
import { decodeReply, encodeRequest, renderReply, type DecodedReply, type RequestMeta } from '../src/api/rpc-wire.ts'
import { AppError } from '../src/kernel/errors.ts'
import { classifyNatsError } from '../src/kernel/nats-errors.ts'
import type { NatsLink } from './nats-status.ts'
import { RpcMux } from './rpc-mux.ts'

/*
 * One request/reply from the gateway to the service of a route. Over NATS request/reply, unless
 * this process serves the route itself on the same connection (src/api/local-rpc.ts): then in
 * memory, with the request the service would have decoded and the reply the gateway would have
 * decoded, and the same 503 while NATS is down and 504 after the timeout. Either way the gateway
 * sends the reply's bytes as they are. Over NATS the call goes through the caller's RpcMux
 * (gateway/rpc-mux.ts: one inbox subscription, one sweep for timeouts), not `nc.request`.
 */
export interface RouteCallDeps {
  nc: NatsConnection
  link: NatsLink
  rpcTimeoutMs: number
}

const timedOut = (): AppError => new AppError(504, 'service.timeout', 'the service did not answer in time')
const noService = (): AppError =>
  new AppError(503, 'service.unavailable', 'no service is answering this route right now')
const linkDown = (): AppError =>
  new AppError(503, 'service.unavailable', 'the platform lost its NATS connection; try again shortly')

export class RouteCaller {
  private readonly d: RouteCallDeps

  private mux: RpcMux | undefined

  constructor(deps: RouteCallDeps) {
    this.d = deps
  }

  /** Made on the first call over NATS: a ROLES=all process answering every route in memory never subscribes. */
  private rpc(): RpcMux {
    if (this.mux === undefined) {
      const mux = new RpcMux(this.d.nc, this.d.rpcTimeoutMs, { timeout: timedOut, noResponders: noService })
      this.d.link.onDrop(() => mux.failAll(linkDown))
      this.mux = mux
    }
    return this.mux
  }

  /** Fails fast with 503 while NATS is disconnected (gateway/nats-status.ts). */
  async call(subject: string, meta: RequestMeta, body: Uint8Array): Promise<DecodedReply> {
    const local = localRoute(this.d.nc, subject)
    if (local !== undefined) return this.d.link.guard(() => this.answerHere(local, meta, body))
    // fails fast while NATS is down; the calls in flight when it drops are rejected by `onDrop`
    if (this.d.link.state() !== 'connected') throw linkDown()
    const out = encodeRequest(meta, body)
    const msg = await this.rpc()
      .request(subject, out.data, out.headers)
      .catch((err: unknown) => {
        if (err instanceof AppError) throw err
        const failure = classifyNatsError(err)
        if (failure === 'no_responders' || failure === 'closed') throw noService()
        if (failure === 'timeout') throw timedOut()
        throw err
      })
    return decodeReply(msg.headers, msg.data)
  }

  /** The in-memory twin of the NATS call: the request as decodeRequest gives it, the reply as decodeReply does. */
  private async answerHere(local: LocalRoute, meta: RequestMeta, body: Uint8Array): Promise<DecodedReply> {
    const req: RpcRequest = {
      requestId: meta.requestId,
      caller: meta.caller,
      params: meta.params,
      query: meta.query,
      body:
        body.length === 0
          ? undefined
          : JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')),
      clientIp: meta.clientIp ?? '',
    }
    if (meta.streamChannelId !== undefined) req.streamChannelId = meta.streamChannelId
    if (meta.streamLastId !== undefined) req.streamLastId = meta.streamLastId
    if (meta.headers !== undefined && Object.keys(meta.headers).length > 0) req.headers = meta.headers
    if (meta.cookies !== undefined && Object.keys(meta.cookies).length > 0) req.cookies = meta.cookies
    if (meta.blob !== undefined) req.blob = meta.blob
    if (meta.traceparent !== undefined) req.traceparent = meta.traceparent
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timedOut()), this.d.rpcTimeoutMs)
    })
    try {
      return renderReply(await Promise.race([local.answer(req), timeout]), local.page)
    } finally {
      clearTimeout(timer)
    }
  }
}
