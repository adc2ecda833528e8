import http from 'node:http'
import type { AddressInfo } from 'node:net'
import pg from 'pg'
import { onShutdown, reportFailure, reportReady } from './protocol.ts'

/*
 * The query benchmark's baseline: a bare node:http server answering every POST with one
 * `pool.query` through node-postgres (the same statement the platform's saved query runs, bound
 * the same way), JSON in and out. DATABASE_URL names the database; POOL_MAX the pool size.
 */
const pool = new pg.Pool({ connectionString: process.env['DATABASE_URL'], max: Number(process.env['POOL_MAX'] ?? '5') })
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const input = (JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { input?: { n?: number } }).input ?? {}
    void (async () => {
      try {
        const r = await pool.query('select $1::int + 1 as v, $2::text as who', [input.n ?? 0, 'bench'])
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ rows: r.rows, row_count: r.rowCount }))
      } catch (err) {
        res.writeHead(500)
        res.end(String(err))
      }
    })()
  })
})
server.listen(0, '127.0.0.1', () => {
  onShutdown(async () => {
    server.close()
    await pool.end()
  })
  reportReady({ port: (server.address() as AddressInfo).port })
})
server.on('error', reportFailure)
