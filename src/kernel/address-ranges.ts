/*
 * IP address ranges (TRUSTED_PROXIES): exact addresses and CIDR ranges, IPv4 and IPv6, in one
 * comma-separated list. An IPv4 address and its IPv4-mapped IPv6 form (::ffff:a.b.c.d, what a
 * dual-stack listener reports for an IPv4 peer) are one address: both are in 10.0.0.0/8, and
 * ::ffff:10.0.0.0/104 is that same range.
 *
 * The list is parsed once. `has` reads the candidate text in place, without a string or array of
 * its own: an IPv4 address (mapped or not) becomes a 32-bit number compared under each IPv4
 * range's mask, an IPv6 one eight 16-bit groups in a scratch array compared with each IPv6 range.
 * So a check allocates nothing (the gateway asks per request): ~20-30 ns for an IPv4 peer, ~50 ns
 * mapped, ~90 ns IPv6 (bench/address-match.ts). node:net's BlockList answers the same but builds a
 * SocketAddress handle for every string it checks: ~2-3 µs, and garbage.
 */

/** One parsed IPv6 address: eight 16-bit groups, reused by every check. */
const scratch = new Uint16Array(8)

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48
  if (c >= 97 && c <= 102) return c - 87
  if (c >= 65 && c <= 70) return c - 55
  return -1
}

/** The address ipv4Into read last, as a signed 32-bit number (a small integer to V8: no heap number). */
let ipv4 = 0

/**
 * Dotted IPv4 text[start, end) into `ipv4`: exactly four decimal parts of 0-255 without leading
 * zeros (a leading zero reads as octal in some parsers: refused, not guessed).
 */
function ipv4Into(text: string, start: number, end: number): boolean {
  let value = 0
  let parts = 0
  let part = 0
  let digits = 0
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 46) {
      if (digits === 0 || part > 255 || ++parts > 3) return false
      value = (value << 8) | part
      part = 0
      digits = 0
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return false
      part = part * 10 + (c - 48)
      digits++
      if (digits > 3) return false
    } else return false
  }
  if (parts !== 3 || digits === 0 || part > 255) return false
  ipv4 = (value << 8) | part
  return true
}

/**
 * An IPv6 address text[start, end) into out (eight groups): hex groups of up to 4 digits, one `::`
 * at most, a dotted IPv4 tail allowed; no zone (`%eth0`) and no brackets.
 */
export function parseIpv6Into(text: string, start: number, end: number, out: Uint16Array): boolean {
  if (end - start < 2) return false
  let i = start
  let n = 0
  let gap = -1
  if (text.charCodeAt(i) === 58) {
    if (text.charCodeAt(i + 1) !== 58) return false
    gap = 0
    i += 2
    if (i === end) {
      for (let k = 0; k < 8; k++) out[k] = 0
      return true
    }
  }
  for (;;) {
    const groupStart = i
    let value = 0
    let c = -1
    while (i < end) {
      c = text.charCodeAt(i)
      const h = hexValue(c)
      if (h < 0) break
      value = value * 16 + h
      i++
    }
    if (i < end && c === 46) {
      // a dotted IPv4 tail: the last 32 bits
      if (n > 6 || !ipv4Into(text, groupStart, end)) return false
      out[n++] = ipv4 >>> 16
      out[n++] = ipv4 & 0xffff
      break
    }
    const digits = i - groupStart
    if (digits === 0 || digits > 4 || n === 8) return false
    out[n++] = value
    if (i === end) break
    if (text.charCodeAt(i) !== 58) return false
    i++
    if (i < end && text.charCodeAt(i) === 58) {
      if (gap !== -1) return false
      gap = n
      i++
      if (i === end) break
    } else if (i === end) return false
  }
  if (gap === -1) return n === 8
  if (n > 7) return false
  // `::` stands for the zero groups between what came before it and what came after
  // (plain loops: the typed array builtins cost more than the copy for eight elements)
  const shift = 8 - n
  for (let k = n - 1; k >= gap; k--) out[k + shift] = out[k] as number
  for (let k = gap; k < gap + shift; k++) out[k] = 0
  return true
}

/** Whether text at start reads `::ffff:` (any case). */
function mappedPrefix(text: string, start: number): boolean {
  if (text.charCodeAt(start) !== 58 || text.charCodeAt(start + 1) !== 58) return false
  for (let k = 2; k < 6; k++) if ((text.charCodeAt(start + k) | 32) !== 102) return false
  return true
}

/** Whether eight groups are an IPv4-mapped address (::ffff:a.b.c.d). */
const isMapped = (g: Uint16Array) =>
  g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff

/** Whether groups a and b agree on their first `bits` bits. */
function samePrefix(a: Uint16Array, aAt: number, b: Uint16Array, bAt: number, bits: number): boolean {
  let g = 0
  for (; bits >= 16; g++, bits -= 16) if (a[aAt + g] !== b[bAt + g]) return false
  return bits === 0 || ((a[aAt + g] as number) ^ (b[bAt + g] as number)) >>> (16 - bits) === 0
}

const v4Mask = (bits: number) => (bits === 0 ? 0 : (0xffffffff << (32 - bits)) | 0)
const v4Text = (v: number) => [24, 16, 8, 0].map((s) => String((v >>> s) & 255)).join('.')

/** ::ffff:0.0.0.0, the first address of the IPv4-mapped range (::ffff:0:0/96). */
const MAPPED = Uint16Array.of(0, 0, 0, 0, 0, 0xffff, 0, 0)

type Entry =
  | { v4: true; base: number; bits: number }
  | { v4: false; groups: Uint16Array; bits: number }
  | { error: string }

/** One entry of a list: an IPv4 range (also an IPv6 one within ::ffff:0:0/96), an IPv6 range, or why it is neither. */
function parseEntry(entry: string): Entry {
  const slash = entry.indexOf('/')
  const end = slash < 0 ? entry.length : slash
  const isV4 = !entry.slice(0, end).includes(':')
  const groups = new Uint16Array(8)
  if (isV4 ? !ipv4Into(entry, 0, end) : !parseIpv6Into(entry, 0, end, groups))
    return { error: `"${entry}" is not an IP address or CIDR range (a.b.c.d, a.b.c.d/n, an IPv6 address or range)` }
  const max = isV4 ? 32 : 128
  let bits = max
  if (slash >= 0) {
    const len = entry.slice(slash + 1)
    if (!/^(0|[1-9]\d{0,2})$/.test(len) || Number(len) > max)
      return { error: `"${entry}": the prefix length must be 0 to ${String(max)}` }
    bits = Number(len)
  }
  const hostBits = (written: string) => ({
    error: `"${entry}" has address bits set past its /${String(bits)} prefix (a range is written with its first address${written})`,
  })
  if (isV4) {
    const base = ipv4 & v4Mask(bits)
    return base === ipv4 ? { v4: true, base, bits } : hostBits(`, e.g. ${v4Text(base)}/${String(bits)}`)
  }
  const masked = new Uint16Array(8)
  for (let g = 0; g < 8; g++) {
    const keep = Math.min(16, Math.max(0, bits - g * 16))
    masked[g] = keep === 0 ? 0 : (groups[g] as number) & (0xffff << (16 - keep))
  }
  if (!samePrefix(groups, 0, masked, 0, 128)) return hostBits('')
  // a range inside the mapped space is the IPv4 range it maps
  if (bits >= 96 && isMapped(groups))
    return { v4: true, base: ((groups[6] as number) << 16) | (groups[7] as number), bits: bits - 96 }
  return { v4: false, groups, bits }
}

const entriesOf = (list: string) =>
  list
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')

/** The first problem of a comma-separated list of addresses and ranges, naming the entry; undefined when every entry parses. */
export function addressRangesError(list: string): string | undefined {
  for (const entry of entriesOf(list)) {
    const r = parseEntry(entry)
    if ('error' in r) return r.error
  }
  return undefined
}

export interface AddressRanges {
  /** How many addresses and ranges the list holds (0: `has` is always false). */
  readonly size: number
  /** Whether the address text[start, end) (spaces around it ignored) is in one of the ranges; not an address: false. */
  has(text: string, start?: number, end?: number): boolean
}

const isSpace = (c: number) => c === 32 || c === 9

/**
 * A comma-separated list of IP addresses and CIDR ranges (`10.0.0.0/8, 192.0.2.7, fd00::/8`),
 * parsed once. An invalid entry throws (the configuration refuses it first: src/kernel/config.ts).
 */
export function parseAddressRanges(list: string): AddressRanges {
  const entries = entriesOf(list).map((entry) => {
    const parsed = parseEntry(entry)
    if ('error' in parsed) throw new Error(`TRUSTED_PROXIES: ${parsed.error}`)
    return parsed
  })
  const v4 = entries.filter((e) => e.v4)
  const v6 = entries.filter((e) => !e.v4)
  // IPv4 range r: (address & mask[r]) === base[r], in signed 32-bit arithmetic
  const v4Base = Int32Array.from(v4, (e) => e.base)
  const v4Masks = Int32Array.from(v4, (e) => v4Mask(e.bits))
  // IPv6 range r: its first address in v6Groups[8r .. 8r+7], its prefix in v6Bits[r]
  const v6Groups = new Uint16Array(8 * v6.length)
  v6.forEach((e, r) => v6Groups.set(e.groups, 8 * r))
  const v6Bits = Uint8Array.from(v6, (e) => e.bits)
  // an IPv6 range holding the whole mapped space (::/0, ::ffff:0:0/96) holds every IPv4 address
  const everyV4 = v6.some((e) => e.bits <= 96 && samePrefix(e.groups, 0, MAPPED, 0, e.bits))
  const size = entries.length

  const hasV4 = (address: number): boolean => {
    if (everyV4) return true
    for (let r = 0; r < v4Base.length; r++) if ((address & (v4Masks[r] as number)) === v4Base[r]) return true
    return false
  }
  return {
    size,
    has(text: string, start = 0, end = text.length): boolean {
      if (size === 0) return false
      while (start < end && isSpace(text.charCodeAt(start))) start++
      while (end > start && isSpace(text.charCodeAt(end - 1))) end--
      if (ipv4Into(text, start, end)) return hasV4(ipv4)
      // a dual-stack listener's IPv4 peer, ::ffff:a.b.c.d, without the general IPv6 parse
      if (end - start > 7 && text.charCodeAt(start + 6) === 58 && mappedPrefix(text, start)) {
        if (ipv4Into(text, start + 7, end)) return hasV4(ipv4)
      }
      if (!parseIpv6Into(text, start, end, scratch)) return false
      if (isMapped(scratch)) return hasV4(((scratch[6] as number) << 16) | (scratch[7] as number))
      for (let r = 0; r < v6Bits.length; r++)
        if (samePrefix(scratch, 0, v6Groups, 8 * r, v6Bits[r] as number)) return true
      return false
    },
  }
}
