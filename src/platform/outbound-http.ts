import { lookup as dnsLookup } from 'node:dns/promises'
import { readFileSync } from 'node:fs'
import type { IncomingHttpHeaders } from 'node:http'
import { BlockList, isIP } from 'node:net'
import { AppError } from '../kernel/errors.ts'
import { abortedError, openPinnedExchange, timeoutError, tooLargeError, type PinnedStream } from './pinned-exchange.ts'

/*
 * The one guarded outbound HTTP client of the platform: callbacks now; connectors,
 * icon URLs and provider endpoints later. Nothing else in the platform opens HTTP connections to
 * addresses a user chose.
 *
 * Per request (and again per redirect hop):
 *  1. parse the URL; only http(s); HTTPS required unless `httpsOnly: false` or the host is in `httpHosts`;
 *  2. the host must be in `allowHosts` (exact, case-insensitive; `'*'` = any);
 *  3. resolve the host (dns.lookup, all addresses; an answer is reused OUTBOUND_DNS_CACHE_SECONDS,
 *     checked again on every use) and refuse when ANY address is in a blocked range
 *     (`blockedReason`): a name that resolves to one public and one private address is refused, so
 *     round-robin answers cannot smuggle an internal target in;
 *  4. connect to the first resolved address itself (pinned): the socket goes to that IP, with the
 *     original name as Host header, SNI and certificate name, so a second DNS answer (rebinding)
 *     cannot move the connection (the exchange, kept connections included: pinned-exchange.ts);
 *  5. a hard deadline over the whole exchange (DNS, connect, TLS, response) and a response size cap.
 * Redirects are not followed by default (`maxRedirects: 0`, the 3xx is returned); when allowed,
 * every hop goes through 1–4 again, and Authorization is dropped when the origin changes.
 *
 * `guardedStream` is the streaming variant (LLM provider responses): the same checks 1–4, then the
 * body is handed out chunk by chunk instead of buffered, with a deadline for the response head, an
 * idle timeout between chunks, a size cap and the caller's AbortSignal. It follows no redirects.
 *
 * `allowPrivate: true` admits private-use destinations (RFC 1918, loopback, CGNAT, IPv6 unique
 * local). Only for endpoints an administrator configured (LLM providers: local runners such as
 * Ollama live on loopback or the LAN), never for URLs a user chose. Link-local (cloud metadata),
 * unspecified, multicast and the other special ranges stay refused even then.
 */

export interface OutboundOptions {
  method?: string
  headers?: Record<string, string>
  body?: string | Uint8Array
  /** Hard limit over the whole exchange, redirects included. */
  timeoutMs: number
  /** Default true. */
  httpsOnly?: boolean
  /** Exact host names (case-insensitive); `'*'` or absent = any host. */
  allowHosts?: readonly string[] | '*'
  /** Default 1 MiB. */
  maxResponseBytes?: number
  /** Default 0: a 3xx answer is returned as it is. */
  maxRedirects?: number
  /** Default true; false returns as soon as the status line and headers arrive (empty body). */
  readBody?: boolean
  /** Default false. Admits private-use addresses (see the header comment); admin-configured endpoints only. */
  allowPrivate?: boolean
  /** Hosts (exact, case-insensitive) that may be reached over plain HTTP although `httpsOnly` is on (an admin's list, e.g. CONNECTOR_HTTP_HOSTS); checked on every hop. */
  httpHosts?: readonly string[]
  /** Headers besides Authorization and Cookie that carry credentials (an API-key header): dropped like them when a redirect changes the origin. */
  secretHeaders?: readonly string[]
}

export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

export interface OutboundDeps {
  /** Name resolution (default: dns.lookup with `all: true`); tests pass a fixed table. */
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>
  /** Extra trusted CA certificates (PEM), added to Node's default roots. */
  ca?: string | Buffer | readonly (string | Buffer)[]
}

export interface OutboundResponse {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
  /** The URL that answered (differs from the request's after followed redirects). */
  url: string
}

export interface ResolvedTarget {
  url: URL
  /** Host without IPv6 brackets or trailing dot, lower case. */
  host: string
  addresses: ResolvedAddress[]
}

const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024

const policyError = (code: string, detail: string) => new AppError(400, `outbound.${code}`, detail)

/** The host of an outside service did not resolve (NXDOMAIN, no address, resolver failure): 502 naming the host. */
const dnsFailed = (host: string, cause?: unknown) =>
  AppError.of('upstream.dns_failed', `the host name ${host} did not resolve`, cause === undefined ? {} : { cause })

// ---------------------------------------------------------------------------------------------
// Address classification

/** One blocked range and why, as a `net.BlockList` of that single subnet. */
interface Rule {
  list: BlockList
  reason: string
}

const rule = (family: 'ipv4' | 'ipv6', cidr: string, reason: string): Rule => {
  const [addr, bits] = cidr.split('/') as [string, string]
  const list = new BlockList()
  list.addSubnet(addr, Number(bits), family)
  return { list, reason }
}

/*
 * Blocked IPv4 ranges: everything of the IANA special-purpose registry that is not globally
 * reachable, except the three documentation ranges (192.0.2.0/24, 198.51.100.0/24,
 * 203.0.113.0/24). Those are not routed on the Internet either, so allowing them exposes nothing
 * internal, and the tests use them to stand up real HTTPS receivers on a local interface.
 */
const V4_BLOCKED: [string, string][] = [
  ['0.0.0.0/8', 'unspecified ("this network")'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local (cloud metadata)'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.88.99.0/24', '6to4 relay anycast'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved / broadcast'],
]
const V4_RULES = V4_BLOCKED.map(([cidr, reason]) => rule('ipv4', cidr, reason))

/*
 * IPv6 forms that embed an IPv4 address are judged by the embedded address: each blocked IPv4
 * range is also blocked inside IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) and 6to4
 * (2002::/16) addresses, with the reason prefixed by the form. The rest of such a prefix (a public
 * IPv4 address inside) is allowed.
 */
const hex4 = (v4: string): [string, string] => {
  const b = v4.split('.').map(Number) as [number, number, number, number]
  return [((b[0] << 8) | b[1]).toString(16), ((b[2] << 8) | b[3]).toString(16)]
}
const EMBEDDINGS: { via: string; prefix: Rule; inner: (v4: string, bits: number) => string }[] = [
  {
    via: 'IPv4-mapped',
    prefix: rule('ipv6', '::ffff:0:0/96', ''),
    inner: (v4, bits) => `::ffff:${hex4(v4).join(':')}/${String(96 + bits)}`,
  },
  {
    via: 'NAT64',
    prefix: rule('ipv6', '64:ff9b::/96', ''),
    inner: (v4, bits) => `64:ff9b::${hex4(v4).join(':')}/${String(96 + bits)}`,
  },
  {
    via: '6to4',
    prefix: rule('ipv6', '2002::/16', ''),
    inner: (v4, bits) => `2002:${hex4(v4).join(':')}::/${String(16 + bits)}`,
  },
]
const EMBEDDED_RULES = EMBEDDINGS.map((e) => ({
  via: e.via,
  prefix: e.prefix,
  rules: V4_BLOCKED.map(([cidr, reason]) => {
    const [addr, bits] = cidr.split('/') as [string, string]
    return rule('ipv6', e.inner(addr, Number(bits)), reason)
  }),
}))

/* Blocked IPv6 ranges. Documentation (2001:db8::/32, 3fff::/20) is allowed like its IPv4 counterparts. */
const V6_RULES: Rule[] = [
  rule('ipv6', '::/128', 'unspecified'),
  rule('ipv6', '::1/128', 'loopback'),
  // The rest of ::/8: IPv4-compatible (deprecated) and reserved; ::ffff:0:0/96 is judged first.
  rule('ipv6', '::/8', 'reserved (IPv4-compatible)'),
  rule('ipv6', '64:ff9b:1::/48', 'local-use NAT64'),
  rule('ipv6', '100::/64', 'discard-only'),
  rule('ipv6', '2001::/23', 'IETF protocol assignments (Teredo, benchmarking, ORCHID)'),
  rule('ipv6', '5f00::/16', 'SRv6 segment identifiers'),
  rule('ipv6', 'fc00::/7', 'unique local'),
  rule('ipv6', 'fe80::/10', 'link-local'),
  rule('ipv6', 'fec0::/10', 'site-local (deprecated)'),
  rule('ipv6', 'ff00::/8', 'multicast'),
]

const firstMatch = (rules: readonly Rule[], address: string, family: 'ipv4' | 'ipv6'): string | undefined =>
  rules.find((r) => r.list.check(address, family))?.reason

/** The reasons `allowPrivate` lifts: private-use networks an operator may run services on. */
const PRIVATE_USE = new Set(['private', 'loopback', 'carrier-grade NAT', 'unique local'])

/**
 * Why an IP address must not be contacted, or null when it may be. Anything that does not parse
 * as an IP address is refused too. `allowPrivate` admits the private-use ranges (`PRIVATE_USE`).
 */
export function blockedReason(address: string, opts: { allowPrivate?: boolean } = {}): string | null {
  // A pure function of its arguments, asked on every outbound call (up to a dozen BlockList
  // checks, each building a SocketAddress: ~1.5 % of the adapter's CPU): the verdicts of the
  // addresses seen last are kept.
  const key = `${opts.allowPrivate === true ? '1' : '0'}${address}`
  const known = verdicts.get(key)
  if (known !== undefined) return known
  const verdict = classify(address, opts)
  if (verdicts.size >= VERDICTS_KEPT) verdicts.clear()
  verdicts.set(key, verdict)
  return verdict
}

const VERDICTS_KEPT = 4096
const verdicts = new Map<string, string | null>()

function classify(address: string, opts: { allowPrivate?: boolean }): string | null {
  const judge = (reason: string | undefined): string | null =>
    reason === undefined || (opts.allowPrivate === true && PRIVATE_USE.has(reason)) ? null : reason
  const plain = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '')
  const family = isIP(plain)
  if (family === 4) return judge(firstMatch(V4_RULES, plain, 'ipv4'))
  if (family === 6) {
    const embedding = EMBEDDED_RULES.find((e) => e.prefix.list.check(plain, 'ipv6'))
    if (embedding !== undefined) {
      const inner = judge(firstMatch(embedding.rules, plain, 'ipv6'))
      return inner === null ? null : `${embedding.via} ${inner}`
    }
    return judge(firstMatch(V6_RULES, plain, 'ipv6'))
  }
  return 'not an IP address'
}

// ---------------------------------------------------------------------------------------------
// Target checks

export const normalizeHost = (h: string): string =>
  h
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase()

/** Parses an allowlist setting: empty → [] (nothing allowed), `*` → '*', else exact host names. */
export function parseHostList(setting: string): string[] | '*' {
  const hosts = setting
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '')
  if (hosts.includes('*')) return '*'
  return hosts.map(normalizeHost)
}

const systemLookup = async (hostname: string): Promise<ResolvedAddress[]> =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }))

/*
 * Resolutions are kept OUTBOUND_DNS_CACHE_SECONDS (`setOutboundDnsCache`, at start): every LLM call
 * of every chat turn goes to the same few provider hosts, and a lookup per call is a getaddrinfo on
 * libuv's thread pool, in a container a DNS round trip or several (search domains). What is kept is
 * only the answer: every use still checks each address (step 3) and pins the connection to it
 * (step 4), so a cached answer gives a rebinding server nothing a fresh one would not. Concurrent
 * requests for a host share one lookup; failed lookups are not kept. 0 turns the cache off.
 */
let dnsCacheMs = 30_000
const DNS_CACHE_MAX_HOSTS = 1024
const resolved = new Map<string, { addresses: Promise<ResolvedAddress[]>; until: number }>()

/** OUTBOUND_DNS_CACHE_SECONDS: how long a host's addresses are reused (0: resolved on every request). */
export function setOutboundDnsCache(seconds: number): void {
  dnsCacheMs = Math.max(0, seconds * 1000)
  resolved.clear()
}

function defaultLookup(hostname: string): Promise<ResolvedAddress[]> {
  if (dnsCacheMs === 0) return systemLookup(hostname)
  const now = Date.now()
  const hit = resolved.get(hostname)
  if (hit !== undefined && hit.until > now) return hit.addresses
  const entry = { addresses: systemLookup(hostname), until: now + dnsCacheMs }
  if (resolved.size >= DNS_CACHE_MAX_HOSTS) resolved.clear()
  resolved.set(hostname, entry)
  entry.addresses.catch(() => {
    if (resolved.get(hostname) === entry) resolved.delete(hostname)
  })
  return entry.addresses
}

/**
 * Steps 1–3 without connecting: the parsed URL and every address its host resolves to, all of
 * them allowed. Throws `outbound.*` AppErrors (status 400) otherwise. Endpoints use it to reject a
 * URL up front (callback_url); `guardedFetch` runs it again at connect time.
 */
export async function resolveTarget(
  rawUrl: string,
  opts: Pick<OutboundOptions, 'httpsOnly' | 'allowHosts' | 'allowPrivate' | 'httpHosts'> = {},
  deps: Pick<OutboundDeps, 'lookup'> = {},
): Promise<ResolvedTarget> {
  let url: URL
  try {
    url = new URL(rawUrl)
  } catch {
    throw policyError('invalid_url', 'not a valid URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw policyError('invalid_url', `scheme ${url.protocol} is not supported`)
  const host = normalizeHost(url.hostname)
  const plainAllowed = (opts.httpHosts ?? []).some((h) => normalizeHost(h) === host)
  if ((opts.httpsOnly ?? true) && url.protocol !== 'https:' && !plainAllowed)
    throw policyError('not_https', 'the URL must use HTTPS')
  if (host === '') throw policyError('invalid_url', 'the URL has no host')
  const allow = opts.allowHosts ?? '*'
  if (allow !== '*' && !allow.some((h) => normalizeHost(h) === host))
    throw policyError('host_not_allowed', `host ${host} is not in the allowlist`)

  let addresses: ResolvedAddress[]
  const literal = isIP(host)
  if (literal !== 0) addresses = [{ address: host, family: literal === 6 ? 6 : 4 }]
  else {
    try {
      addresses = await (deps.lookup ?? defaultLookup)(host)
    } catch (err) {
      // 502, not a policy 400: the URL is acceptable, the outside world did not answer for it.
      throw dnsFailed(host, err)
    }
    if (addresses.length === 0) throw dnsFailed(host)
  }
  for (const a of addresses) {
    const reason = blockedReason(a.address, { allowPrivate: opts.allowPrivate === true })
    if (reason !== null)
      throw policyError('private_address', `host ${host} resolves to a non-public address (${reason})`)
  }
  return { url, host, addresses }
}

// ---------------------------------------------------------------------------------------------
// Requests

const caCache = new Map<string, string>()

/** The PEM of OUTBOUND_EXTRA_CA_FILE (read once per path); undefined when the setting is empty. */
export function extraCa(path: string): string | undefined {
  if (path === '') return undefined
  let pem = caCache.get(path)
  if (pem === undefined) {
    pem = readFileSync(path, 'utf8')
    caCache.set(path, pem)
  }
  return pem
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

export async function guardedFetch(
  rawUrl: string,
  options: OutboundOptions,
  deps: OutboundDeps = {},
): Promise<OutboundResponse> {
  const deadline = Date.now() + options.timeoutMs
  const maxRedirects = options.maxRedirects ?? 0
  let method = (options.method ?? 'GET').toUpperCase()
  let body = options.body
  let headers = { ...options.headers }
  let current = rawUrl
  for (let hop = 0; ; hop++) {
    const target = await withDeadline(resolveTarget(current, options, deps), deadline)
    const res = await requestPinned(target, {
      method,
      headers,
      body,
      deadline,
      maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      readBody: options.readBody ?? true,
      ca: deps.ca,
    })
    const location = res.headers.location
    if (!REDIRECTS.has(res.status) || location === undefined || maxRedirects === 0) return res
    if (hop >= maxRedirects)
      throw new AppError(502, 'outbound.too_many_redirects', `more than ${String(maxRedirects)} redirects`)
    const next = new URL(location, target.url)
    if (next.origin !== target.url.origin) {
      const secret = new Set(['authorization', 'cookie', ...(options.secretHeaders ?? []).map((h) => h.toLowerCase())])
      headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !secret.has(k.toLowerCase())))
    }
    if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
      method = method === 'HEAD' ? 'HEAD' : 'GET'
      body = undefined
      headers = Object.fromEntries(
        Object.entries(headers).filter(([k]) => !['content-type', 'content-length'].includes(k.toLowerCase())),
      )
    }
    current = next.toString()
  }
}

async function withDeadline<T>(p: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timeoutError()), Math.max(0, deadline - Date.now()))
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

async function requestPinned(
  target: ResolvedTarget,
  o: {
    method: string
    headers: Record<string, string>
    body: string | Uint8Array | undefined
    deadline: number
    maxResponseBytes: number
    readBody: boolean
    ca: OutboundDeps['ca']
  },
): Promise<OutboundResponse> {
  const url = target.url.toString()
  const s = await openPinnedExchange({
    target,
    method: o.method,
    headers: o.headers,
    ...(o.body === undefined ? {} : { body: o.body }),
    deadline: o.deadline,
    // the deadline below bounds the body as a whole; no separate wait between chunks
    idleTimeoutMs: 2_147_000_000,
    maxBytes: o.maxResponseBytes,
    ...(o.ca === undefined ? {} : { ca: o.ca }),
  })
  if (!o.readBody) {
    s.close()
    return { status: s.status, headers: s.headers, body: Buffer.alloc(0), url }
  }
  if (Number(s.headers['content-length'] ?? '0') > o.maxResponseBytes) {
    s.close()
    throw tooLargeError(o.maxResponseBytes)
  }
  const timer = setTimeout(() => s.close(timeoutError()), Math.max(0, o.deadline - Date.now()))
  try {
    const chunks: Buffer[] = []
    for await (const chunk of s.body) chunks.push(chunk)
    return { status: s.status, headers: s.headers, body: Buffer.concat(chunks), url }
  } finally {
    clearTimeout(timer)
  }
}

// ---------------------------------------------------------------------------------------------
// Streaming

export interface OutboundStreamOptions {
  method?: string
  headers?: Record<string, string>
  body?: string | Uint8Array
  /** DNS, connect, TLS, sending the request and the response's status line and headers must fit in this. */
  headTimeoutMs: number
  /** Longest wait for the next body chunk while the consumer waits for one (its own processing time does not count). */
  idleTimeoutMs: number
  /** Default true. */
  httpsOnly?: boolean
  /** Exact host names (case-insensitive); `'*'` or absent = any host. */
  allowHosts?: readonly string[] | '*'
  /** Default false; admin-configured endpoints only (see the header comment). */
  allowPrivate?: boolean
  /** Hosts (exact, case-insensitive) that may be reached over plain HTTP although `httpsOnly` is on (an admin's list). */
  httpHosts?: readonly string[]
  /** Cap over the whole body; default 64 MiB. */
  maxResponseBytes?: number
  /** Ends the exchange at any point: before the head arrives or while the body streams. */
  signal?: AbortSignal
}

/** The open exchange `guardedStream` answers (pinned-exchange.ts). */
export type OutboundStream = PinnedStream

const DEFAULT_MAX_STREAM_BYTES = 64 * 1024 * 1024

/**
 * The streaming variant of `guardedFetch`: checks 1–4 of the header comment, no redirects (a 3xx
 * is returned as it is), and the body handed out as it arrives.
 */
export async function guardedStream(
  rawUrl: string,
  options: OutboundStreamOptions,
  deps: OutboundDeps = {},
): Promise<OutboundStream> {
  const { signal } = options
  const isAborted = () => signal?.aborted === true
  if (isAborted()) throw abortedError(signal)
  const deadline = Date.now() + options.headTimeoutMs
  const target = await withDeadline(resolveTarget(rawUrl, options, deps), deadline)
  if (isAborted()) throw abortedError(signal)
  return openPinnedExchange({
    target,
    method: (options.method ?? 'GET').toUpperCase(),
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
    deadline,
    idleTimeoutMs: options.idleTimeoutMs,
    maxBytes: options.maxResponseBytes ?? DEFAULT_MAX_STREAM_BYTES,
    ...(signal === undefined ? {} : { signal }),
    ...(deps.ca === undefined ? {} : { ca: deps.ca }),
  })
}
