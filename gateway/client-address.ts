import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import { parseAddressRanges, type AddressRanges } from '../src/kernel/address-ranges.ts'

/*
 * One spelling per client: an IPv4 client of a dual-stack listener shows up as ::ffff:a.b.c.d and
 * is counted as a.b.c.d; IPv6 text in lower case.
 */

/** The TCP peer as uWS gives it (inet_ntop text: lower-case already), in that spelling. */
function peerOf(res: HttpResponse): string {
  const ip = Buffer.from(res.getRemoteAddressAsText()).toString('latin1')
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip
}

const isSpace = (c: number) => c === 32 || c === 9

/**
 * header[start, end) in that spelling, read by position: trimmed, an IPv4-mapped address
 * without its ::ffff:, lower case (one slice; a lower-cased copy only when there is upper case).
 */
function hopText(header: string, start: number, end: number): string {
  while (start < end && isSpace(header.charCodeAt(start))) start++
  while (end > start && isSpace(header.charCodeAt(end - 1))) end--
  if (end - start > 7 && header.charCodeAt(start) === 58 && header.charCodeAt(start + 6) === 58) {
    const prefix = header.slice(start, start + 7).toLowerCase()
    if (prefix === '::ffff:' && /^\d+\.\d+\.\d+\.\d+$/.test(header.slice(start + 7, end))) start += 7
  }
  const hop = header.slice(start, end)
  for (let i = 0; i < hop.length; i++) {
    const c = hop.charCodeAt(i)
    if (c >= 65 && c <= 90) return hop.toLowerCase()
  }
  return hop
}

/**
 * The client named by an X-Forwarded-For chain that reached us from a trusted proxy: walking from
 * the right (the hop the trusted peer added last), trusted proxies are skipped and the first hop
 * that is not one is the client. Hops further left are whatever that client chose to send, so they
 * are never believed. Every hop trusted: the leftmost; no hop: undefined. The hops are read in
 * place (no split): only the answer becomes a string of its own.
 */
export function forwardedClient(header: string, trusted: AddressRanges): string | undefined {
  let end = header.length
  // the leftmost hop seen so far, by position: -1 none
  let leftStart = -1
  let leftEnd = -1
  while (end > 0) {
    const comma = header.lastIndexOf(',', end - 1)
    const start = comma + 1
    let s = start
    while (s < end && isSpace(header.charCodeAt(s))) s++
    if (s < end) {
      if (!trusted.has(header, start, end)) return hopText(header, start, end)
      leftStart = start
      leftEnd = end
    }
    end = comma < 0 ? 0 : comma
  }
  return leftStart < 0 ? undefined : hopText(header, leftStart, leftEnd)
}

/**
 * The client address for rate limits: the peer, unless the peer is a trusted proxy
 * (TRUSTED_PROXIES: addresses and CIDR ranges, parsed once here); then the X-Forwarded-For hop
 * forwardedClient picks.
 */
export function clientAddressResolver(
  trustedProxies: string | undefined,
): (res: HttpResponse, req: HttpRequest) => string {
  const trusted = parseAddressRanges(trustedProxies ?? '')
  return (res, req) => {
    const peer = peerOf(res)
    if (trusted.size === 0 || !trusted.has(peer)) return peer
    return forwardedClient(req.getHeader('x-forwarded-for'), trusted) ?? peer
  }
}
