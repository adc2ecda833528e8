import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/* A plain node:http API answering every request with a small JSON body: the upstream of the connector benchmark. Binds BENCH_UPSTREAM_HOST. */
const body = JSON.stringify({ id: '42', name: 'Ada Lovelace', ok: true })
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) })
  res.end(body)
})
server.keepAliveTimeout = 60_000
server.on('error', reportFailure)
server.listen(0, process.env['BENCH_UPSTREAM_HOST'] ?? '127.0.0.1', () => {
  onShutdown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  reportReady({ port: (server.address() as AddressInfo).port })
})
