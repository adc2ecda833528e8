import type { HttpRequest, HttpResponse } from 'uWebSockets.js'

/** An IPv4 client of a dual-stack listener shows up as ::ffff:a.b.c.d; one spelling per client. */
const plainIp = (ip: string): string =>
  ip
    .trim()
    .toLowerCase()
    .replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '')

/** The TCP peer as uWS gives it (inet_ntop text: lower-case already), in plainIp's spelling. */
function peerOf(res: HttpResponse): string {
  const ip = Buffer.from(res.getRemoteAddressAsText()).toString('latin1')
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip
}

/**
 * The client address for rate limits: the peer, unless the peer is a trusted proxy (TRUSTED_PROXIES,
 * comma-separated); then the nearest X-Forwarded-For hop that is not itself a trusted proxy (hops
 * further left are whatever the client chose to send, so they are never believed).
 */
export function clientAddressResolver(
  trustedProxies: string | undefined,
): (res: HttpResponse, req: HttpRequest) => string {
  const trusted = new Set((trustedProxies ?? '').split(',').map(plainIp).filter(Boolean))
  return (res, req) => {
    const peer = peerOf(res)
    if (trusted.size === 0 || !trusted.has(peer)) return peer
    const hops = req.getHeader('x-forwarded-for').split(',').map(plainIp).filter(Boolean)
    for (let i = hops.length - 1; i >= 0; i--) if (!trusted.has(hops[i] as string)) return hops[i] as string
    return hops[0] ?? peer
  }
}
