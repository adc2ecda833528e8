import uws from 'uWebSockets.js'
import type { us_listen_socket } from 'uWebSockets.js'
import { jwtVerify } from 'jose'
import pg from 'pg'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/*
 * The floor of the resource read (gateway.bench.ts): the smallest server doing what
 * GET /api/v1/agents/{ns}/{name} must do: verify the same HS256 JWT (jose, SECRET_KEY) and read
 * the same agent row from the platform's Postgres (pg Pool of 10, DATABASE_URL), answered as JSON.
 */
// Imported once: given raw bytes, jose would import a WebCrypto key on every verify (~a quarter of this server's CPU).
const key = await crypto.subtle.importKey(
  'raw',
  new TextEncoder().encode(process.env['SECRET_KEY'] ?? ''),
  { name: 'HMAC', hash: 'SHA-256' },
  false,
  ['verify'],
)
const pool = new pg.Pool({ connectionString: process.env['DATABASE_URL'], max: 10 })
// The columns the resource service reads (src/resources/row.ts ROW_COLUMNS); secrets are not sent.
const SQL =
  'select id, kind, namespace, name, spec, secrets, owner_id, managed_by, checksum, version, is_active, created_at, updated_at from resources where kind = $1 and namespace = $2 and name = $3'
const app = uws.App()
app.get('/api/v1/agents/:ns/:name', (res, req) => {
  const token = req.getHeader('authorization').slice(7)
  const params = ['agent', req.getParameter(0), req.getParameter(1)]
  let aborted = false
  res.onAborted(() => (aborted = true))
  const answer = (status: string, body: unknown) =>
    !aborted &&
    res.cork(() => res.writeStatus(status).writeHeader('content-type', 'application/json').end(JSON.stringify(body)))
  void (async () => {
    const claims = await jwtVerify(token, key, { algorithms: ['HS256'] }).then(
      (v) => v.payload,
      () => null,
    )
    if (claims?.['type'] !== 'access') return answer('401 Unauthorized', { detail: 'invalid token' })
    const row = (await pool.query<{ secrets?: unknown }>(SQL, params)).rows[0]
    if (row === undefined) return answer('404 Not Found', { detail: 'not found' })
    delete row.secrets
    return answer('200 OK', row)
  })().catch(() => answer('500 Internal Server Error', { detail: 'query failed' }))
})
app.listen('127.0.0.1', 0, (socket: us_listen_socket | false) => {
  if (socket === false) return reportFailure(new Error('uws: cannot listen'))
  onShutdown(async () => {
    uws.us_listen_socket_close(socket)
    await pool.end()
  })
  reportReady({ port: uws.us_socket_local_port(socket as unknown as Parameters<typeof uws.us_socket_local_port>[0]) })
})
