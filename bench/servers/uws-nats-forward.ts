import uws from 'uWebSockets.js'
import type { us_listen_socket } from 'uWebSockets.js'
import { encodeRequest } from '../../src/api/rpc-wire.ts'
import { rpcSubject } from '../../src/api/route.ts'
import { loadConfig } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { connectNats, natsAuthOf } from '../../src/platform/nats.ts'
import { RpcMux } from '../../gateway/rpc-mux.ts'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/*
 * The floor of a ROLES=gateway process: the smallest uWS server that forwards every GET over NATS
 * request/reply to the route's service (BENCH_STUB_ROUTE, answered by servers/stub-service.ts) with
 * the platform's wire (the request id and the path parameters in NATS headers, encodeRequest) and
 * copies the reply's bytes to the socket. No authentication, no validation, no request cycle.
 * BENCH_FORWARD_MODE: `request` (nats.js `nc.request` per call) or `mux` (gateway/rpc-mux.ts).
 */
try {
  const config = loadConfig(process.env)
  const log = createLogger({ level: config.LOG_LEVEL, svc: 'bench-forward' })
  const nc = await connectNats(config.NATS_URL, 'bench-forward', log, natsAuthOf(config))
  const subject = rpcSubject(natsNames(config.NATS_PREFIX), process.env['BENCH_STUB_ROUTE'] ?? '')
  const mode = process.env['BENCH_FORWARD_MODE'] ?? 'mux'
  const mux = new RpcMux(nc, 30_000, {
    timeout: () => new Error('timeout'),
    noResponders: () => new Error('no responders'),
  })
  const call =
    mode === 'request'
      ? async (data: Uint8Array, headers: ReturnType<typeof encodeRequest>['headers']) =>
          (await nc.request(subject, data, { timeout: 30_000, headers })).data
      : async (data: Uint8Array, headers: ReturnType<typeof encodeRequest>['headers']) =>
          (await mux.request(subject, data, headers)).data
  const empty = new Uint8Array(0)
  let seq = 0
  const app = uws.App()
  app.get('/api/v1/agents/:namespace/:name', (res, req) => {
    const params = { namespace: req.getParameter(0) ?? '', name: req.getParameter(1) ?? '' }
    let aborted = false
    res.onAborted(() => {
      aborted = true
    })
    const out = encodeRequest({ requestId: String(++seq), caller: null, params, query: {} }, empty)
    void (async () => {
      let body: Uint8Array | null = null
      try {
        body = await call(out.data, out.headers)
      } catch {
        body = null
      }
      if (aborted) return
      res.cork(() => {
        if (body === null) res.writeStatus('502 Bad Gateway').end()
        else res.writeHeader('content-type', 'application/json').end(body)
      })
    })()
  })
  app.listen('127.0.0.1', 0, (socket: us_listen_socket | false) => {
    if (socket === false) {
      reportFailure(new Error('uws: cannot listen'))
      return
    }
    onShutdown(async () => {
      uws.us_listen_socket_close(socket)
      await nc.close()
    })
    reportReady({ port: uws.us_socket_local_port(socket as unknown as Parameters<typeof uws.us_socket_local_port>[0]) })
  })
} catch (err) {
  reportFailure(err)
}
