import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/*
 * A local OTLP/HTTP trace receiver for the gateway bench's tracing-on row: reads each
 * `POST /v1/traces` body whole and answers 200 `{}`, keeping nothing (a collector's cheapest
 * answer), so the row measures what exporting costs the platform process.
 */
const server = http.createServer((req, res) => {
  req.on('data', () => undefined)
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'))
})
server.on('error', reportFailure)
server.listen(0, '127.0.0.1', () => {
  onShutdown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  reportReady({ port: (server.address() as AddressInfo).port })
})
