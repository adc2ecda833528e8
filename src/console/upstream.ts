import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'

/*
 * Calls to the platform's API (the gateway at CONSOLE_API_URL) from the console server: a JSON
 * call for the session endpoints, and a streaming exchange for the proxy. The upstream is the
 * operator's own gateway, set in the configuration like the command line's URL — never an address
 * a user chose — so this is a plain node:http client, not the guarded outbound one.
 */
export interface Upstream {
  base: URL
}

export function openUpstream(
  up: Upstream,
  method: string,
  pathAndQuery: string,
  headers: Record<string, string>,
): { req: ReturnType<typeof httpRequest>; response: Promise<IncomingMessage> } {
  const url = new URL(pathAndQuery, up.base)
  const make = url.protocol === 'https:' ? httpsRequest : httpRequest
  const req = make(url, { method, headers })
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req.on('response', resolve)
    req.on('error', reject)
  })
  return { req, response }
}

/** A JSON request to the API; resolves with the status, headers and parsed body (undefined when empty). */
export async function upstreamJson(
  up: Upstream,
  method: string,
  path: string,
  opts: { body?: unknown; token?: string | undefined; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: unknown }> {
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers }
  const data = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body))
  if (data !== undefined) {
    headers['content-type'] = 'application/json'
    headers['content-length'] = String(data.length)
  }
  if (opts.token !== undefined) headers['authorization'] = `Bearer ${opts.token}`
  const { req, response } = openUpstream(up, method, path, headers)
  req.end(data)
  const res = await response
  const chunks: Buffer[] = []
  for await (const c of res) chunks.push(c as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  let body: unknown
  try {
    body = text === '' ? undefined : JSON.parse(text)
  } catch {
    body = { detail: text.slice(0, 200), code: 'console.upstream_unavailable' }
  }
  return { status: res.statusCode ?? 502, headers: res.headers, body }
}
