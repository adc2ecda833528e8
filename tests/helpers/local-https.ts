import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import https from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/*
 * Real HTTPS receivers for the outbound-HTTP and callback tests. The guarded client refuses
 * loopback and private addresses, so a receiver listens on a documentation address
 * (198.51.100.0/24, allowed by the guard, never routed on the Internet) added to `lo` for the
 * duration of the test file. Needs root and `ip` (iproute2, installed when root and missing) and
 * the openssl CLI for a self-signed certificate made at test time; `skip` says why not otherwise.
 * Each test file uses its own address, so files running in parallel do not collide.
 */
interface Teardown {
  teardown(fn: () => unknown): void
}

export interface LocalTls {
  /** false when usable, else the reason to skip the subtests that need it. */
  skip: string | false
  address: string
  certFile: string
  cert: string
  key: string
}

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0

export function prepareLocalTls(t: Teardown, address: string, names: string[]): LocalTls {
  const none = (skip: string): LocalTls => ({ skip, address, certFile: '', cert: '', key: '' })
  if (process.getuid?.() !== 0) return none('needs root to add a documentation address to the lo interface')
  if (!has('ip')) {
    const r = spawnSync(
      'sh',
      [
        '-c',
        'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iproute2 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iproute2)',
      ],
      { stdio: 'ignore' },
    )
    if (r.status !== 0 || !has('ip')) return none('the ip command (iproute2) is missing and could not be installed')
  }
  if (!has('openssl')) return none('the openssl CLI is missing')
  const added = spawnSync('ip', ['addr', 'add', `${address}/32`, 'dev', 'lo'], { encoding: 'utf8' })
  if (added.status !== 0 && !/exists/i.test(added.stderr))
    return none(`ip addr add ${address}/32 dev lo failed: ${added.stderr.trim()}`)
  t.teardown(() => {
    spawnSync('ip', ['addr', 'del', `${address}/32`, 'dev', 'lo'], { stdio: 'ignore' })
  })
  const dir = mkdtempSync(join(tmpdir(), 'local-tls-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const certFile = join(dir, 'cert.pem')
  const keyFile = join(dir, 'key.pem')
  const san = [...names.map((n) => `DNS:${n}`), `IP:${address}`].join(',')
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      `/CN=${names[0] ?? address}`,
      '-addext',
      `subjectAltName=${san}`,
    ],
    { stdio: 'ignore' },
  )
  return { skip: false, address, certFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') }
}

/**
 * prepareLocalTls for a test file that needs it throughout: when it cannot be had, the file plans
 * no tests, says why, and ends here.
 */
export function requireLocalTls(
  t: Teardown & { plan(n: number, why: string): void },
  address: string,
  names: string[],
): LocalTls & { skip: false } {
  const tls = prepareLocalTls(t, address, names)
  if (tls.skip !== false) {
    t.plan(0, tls.skip)
    process.exit(0)
  }
  return { ...tls, skip: false }
}

/**
 * A test server listening on the local TLS address (a free port); `close` destroys every socket it
 * accepted, hanging and streaming exchanges included, so a test's teardown never waits on a client.
 */
export async function listenLocal(server: Server, tls: LocalTls): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  server.on('connection', (sock: Socket) => {
    sockets.add(sock)
    sock.once('close', () => sockets.delete(sock))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, tls.address, () => resolve())
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const sock of sockets) sock.destroy()
      await closed
    },
  }
}

export interface Received {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}

export interface Receiver {
  port: number
  received: Received[]
  /** Answers the next requests (one that never calls `res.end` leaves the client hanging). */
  handler: (req: Received, res: ServerResponse) => void
  close(): Promise<void>
}

export async function startReceiver(
  t: Teardown,
  tls: LocalTls,
  handler: Receiver['handler'] = (_r, res) => res.end('ok'),
): Promise<Receiver> {
  const receiver: Receiver = { port: 0, received: [], handler, close: async () => undefined }
  const server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const r: Received = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      }
      receiver.received.push(r)
      receiver.handler(r, res)
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, tls.address, () => resolve())
  })
  receiver.port = (server.address() as AddressInfo).port
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  t.teardown(() => receiver.close())
  return receiver
}
