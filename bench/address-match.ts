import { BlockList } from 'node:net'
import { PerformanceObserver } from 'node:perf_hooks'
import { forwardedClient } from '../gateway/client-address.ts'
import { parseAddressRanges } from '../src/kernel/address-ranges.ts'

/*
 * What a TRUSTED_PROXIES check costs per call, in a tight loop (not a server benchmark, so not in
 * run.ts's registry): `node --import tsx bench/address-match.ts`. The range check
 * (src/kernel/address-ranges.ts) against the exact-address Set it replaced and node:net's
 * BlockList, for an IPv4, a mapped and an IPv6 peer; then the X-Forwarded-For walk, the old
 * split + Set against the in-place one. Each case: the fastest of 7 rounds (a shared host is
 * noisy), and the garbage collections during them (0: the loop allocates nothing that survives).
 */
let gcs = 0
new PerformanceObserver((list) => (gcs += list.getEntries().length)).observe({ entryTypes: ['gc'] })

async function best(loop: (n: number) => number, n: number): Promise<{ ns: number; gc: number }> {
  loop(n / 20)
  let ns = Infinity
  const g0 = gcs
  for (let round = 0; round < 7; round++) {
    const t0 = process.hrtime.bigint()
    loop(n)
    ns = Math.min(ns, Number(process.hrtime.bigint() - t0) / n)
    // let the GC observer's entries arrive
    await new Promise((r) => setTimeout(r, 5))
  }
  return { ns, gc: gcs - g0 }
}

const line = (what: string, input: string, r: { ns: number; gc: number }) =>
  process.stdout.write(`${what.padEnd(24)} ${input.padEnd(48)} ${r.ns.toFixed(1).padStart(8)} ns  gc ${String(r.gc)}\n`)

const set = new Set(['10.1.2.3', '127.0.0.1'])
const block = new BlockList()
block.addSubnet('10.0.0.0', 8, 'ipv4')
block.addSubnet('fd00::', 8, 'ipv6')
const ranges = parseAddressRanges('10.0.0.0/8, fd00::/8')
for (const peer of ['10.1.2.3', '203.0.113.9', '::ffff:10.1.2.3', '2001:db8::7']) {
  const family = peer.includes(':') ? 'ipv6' : 'ipv4'
  line(
    'Set.has (exact)',
    peer,
    await best((n) => {
      let h = 0
      for (let i = 0; i < n; i++) if (set.has(peer)) h++
      return h
    }, 2e6),
  )
  line(
    'ranges.has',
    peer,
    await best((n) => {
      let h = 0
      for (let i = 0; i < n; i++) if (ranges.has(peer)) h++
      return h
    }, 2e6),
  )
  line(
    'BlockList.check',
    peer,
    await best((n) => {
      let h = 0
      for (let i = 0; i < n; i++) if (block.check(peer, family)) h++
      return h
    }, 1e5),
  )
}

const plainIp = (ip: string) =>
  ip
    .trim()
    .toLowerCase()
    .replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '')
const trustedSet = new Set(['10.1.2.3', '10.1.2.4'])
function splitWalk(header: string): string | undefined {
  const hops = header.split(',').map(plainIp).filter(Boolean)
  for (let i = hops.length - 1; i >= 0; i--) if (!trustedSet.has(hops[i] as string)) return hops[i]
  return hops[0]
}
for (const header of ['203.0.113.9', '203.0.113.9, 10.1.2.3', '198.51.100.1, 203.0.113.9, 10.1.2.4, 10.1.2.3']) {
  line(
    'walk: split + Set',
    header,
    await best((n) => {
      let k = 0
      for (let i = 0; i < n; i++) k += splitWalk(header)?.length ?? 0
      return k
    }, 5e5),
  )
  line(
    'walk: in place + ranges',
    header,
    await best((n) => {
      let k = 0
      for (let i = 0; i < n; i++) k += forwardedClient(header, ranges)?.length ?? 0
      return k
    }, 5e5),
  )
}
