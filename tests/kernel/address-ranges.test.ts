import { BlockList, isIP } from 'node:net'
import t from 'tap'
import { addressRangesError, parseAddressRanges } from '../../src/kernel/address-ranges.ts'
import { loadConfig } from '../../src/kernel/config.ts'

/*
 * Address ranges (src/kernel/address-ranges.ts, TRUSTED_PROXIES): exact addresses and CIDR ranges,
 * IPv4 and IPv6, IPv4-mapped peers in IPv4 ranges; invalid entries refused by name, by the
 * configuration too; and the same answers as node:net's BlockList over many generated addresses.
 */
t.test('exact addresses and ranges, IPv4 and IPv6, mapped peers', async (t) => {
  const r = parseAddressRanges(' 10.0.0.0/8 , 192.0.2.7,fd00::/8, 2001:db8:0:1::/64, ::1 ,')
  t.equal(r.size, 5, 'empty entries and spaces ignored')
  const inside = [
    '10.0.0.0',
    '10.255.255.255',
    '10.1.2.3',
    '::ffff:10.1.2.3',
    '::FFFF:10.1.2.3',
    '0:0:0:0:0:ffff:a01:203',
    '192.0.2.7',
    '::ffff:192.0.2.7',
    'fd00::1',
    'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    'FD12:3456::',
    '2001:db8:0:1::',
    '2001:db8:0:1:ffff:ffff:ffff:ffff',
    '2001:0db8:0000:0001:0000:0000:0000:0001',
    '::1',
    '0:0:0:0:0:0:0:1',
    '  10.9.9.9\t',
  ]
  for (const a of inside) t.ok(r.has(a), `${JSON.stringify(a)} is in`)
  const outside = [
    '11.0.0.0',
    '9.255.255.255',
    '192.0.2.8',
    '::ffff:192.0.2.8',
    // 10.1.2.3 as an IPv4-compatible (not mapped) address is another address
    '::10.1.2.3',
    '::a01:203',
    'fc00::1',
    'fe00::',
    '2001:db8:0:2::1',
    '2001:db8::1',
    '::2',
    '::',
    '',
    '   ',
    'unknown',
    '10.1.2',
    '10.1.2.3.4',
    '10.1.2.256',
    '010.1.2.3',
    '10.1.2.3/8',
    '10.1.2.3:8080',
    '[::1]',
    '::1%lo',
    'fd00::1::2',
    'fd00:::1',
    'fd00:1:2:3:4:5:6:7:8',
    'fd00:12345::',
    ':fd00::',
    'fd00:',
    '1:2:3:4:5:6:7:1.2.3.4',
    '::ffff:10.1.2.3.4',
    '::ffff:a.b.c.d',
  ]
  for (const a of outside) t.notOk(r.has(a), `${JSON.stringify(a)} is not in`)
  t.ok(r.has('x 10.1.2.3 y', 1, 10), 'a slice of a longer text (an X-Forwarded-For hop in place)')
  t.notOk(r.has('x 11.1.2.3 y', 1, 10))

  const ipv4All = parseAddressRanges('0.0.0.0/0')
  t.ok(ipv4All.has('203.0.113.9') && ipv4All.has('::ffff:203.0.113.9'), '0.0.0.0/0: every IPv4 address, mapped too')
  t.notOk(ipv4All.has('2001:db8::1'), 'but no IPv6 address')
  const mappedRange = parseAddressRanges('::ffff:10.0.0.0/104')
  t.ok(mappedRange.has('10.2.3.4'), 'a mapped IPv6 range holds the IPv4 addresses it maps')
  t.notOk(parseAddressRanges('').has('10.0.0.1'), 'an empty list holds nothing')
  t.equal(parseAddressRanges('').size, 0)
  const single = parseAddressRanges('203.0.113.5/32, 2001:db8::5/128')
  t.ok(single.has('203.0.113.5') && single.has('2001:db8::5'), '/32 and /128 are exact addresses')
  t.notOk(single.has('203.0.113.4') || single.has('2001:db8::4'))
  const odd = parseAddressRanges('172.16.0.0/12, 2001:db8:8000::/33')
  t.ok(odd.has('172.31.255.255') && !odd.has('172.32.0.0'), 'a prefix inside a byte')
  t.ok(odd.has('2001:db8:8000::1') && !odd.has('2001:db8:7fff::1'), 'a prefix inside a 16-bit group')
})

t.test('invalid entries are refused by name, by the configuration too', async (t) => {
  t.equal(addressRangesError('10.0.0.0/8, ::1, fd00::/8, 192.0.2.1/32'), undefined)
  const cases: [string, RegExp][] = [
    ['10.0.0.0/8, proxy.internal', /"proxy\.internal" is not an IP address or CIDR range/],
    ['10.0.0.0/33', /"10\.0\.0\.0\/33": the prefix length must be 0 to 32/],
    ['fd00::/129', /must be 0 to 128/],
    ['10.0.0.0/', /prefix length/],
    ['10.0.0.0/08', /prefix length/],
    ['10.0.0.0/8/8', /prefix length/],
    ['10.1.2.3/8', /"10\.1\.2\.3\/8" has address bits set past its \/8 prefix.*e\.g\. 10\.0\.0\.0\/8/],
    ['fd00::1/8', /"fd00::1\/8" has address bits set past its \/8 prefix/],
    ['::1%lo', /"::1%lo" is not an IP address/],
  ]
  for (const [list, message] of cases) {
    t.match(addressRangesError(list), message, list)
    t.throws(() => parseAddressRanges(list), { message: /^TRUSTED_PROXIES: / })
  }
  const config = (value: string) =>
    loadConfig({
      NODE_ENV: 'test',
      TRUSTED_PROXIES: value,
      SECRET_KEY: 'k'.repeat(32),
      ENCRYPTION_KEY: 'e'.repeat(32),
      DATABASE_PASSWORD: 'unused',
    })
  t.equal(config('10.0.0.0/8,fd00::/8').TRUSTED_PROXIES, '10.0.0.0/8,fd00::/8')
  t.throws(
    () => config('10.0.0.0/8, 10.300.0.0/16'),
    {
      code: 'config.invalid',
      message: /TRUSTED_PROXIES: "10\.300\.0\.0\/16" is not an IP address/,
      issues: [{ path: 'TRUSTED_PROXIES', message: /10\.300\.0\.0\/16/ }],
    },
    'the configuration names the entry',
  )
})

/** A small deterministic generator (xorshift32): the same addresses on every run. */
function generator(seed: number) {
  let x = seed
  const next = () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return x >>> 0
  }
  return { int: (n: number) => next() % n }
}

t.test('the same answers as node:net BlockList over generated addresses and ranges', async (t) => {
  const g = generator(0x9e3779b9)
  const hex = () => g.int(0x10000).toString(16)
  const v4 = () => [0, 0, 0, 0].map(() => String(g.int(4) === 0 ? 10 : g.int(256))).join('.')
  // few distinct leading groups, so that generated addresses often fall in generated ranges
  const v6 = () => {
    const groups = [
      ['2001', 'fd00', 'fe80'][g.int(3)] as string,
      ...Array.from({ length: 7 }, () => (g.int(3) === 0 ? '0' : hex())),
    ]
    const text = groups.join(':')
    // compress a run of zero groups half of the time (the spelling must not matter)
    return g.int(2) === 0 ? text.replace(/(^|:)0(:0)+(:|$)/, '::') : text
  }
  const network = (address: string, bits: number, family: 'ipv4' | 'ipv6'): string => {
    // mask through BlockList's own notion: the first address of the subnet, found by parsing
    if (family === 'ipv4') {
      const n = address.split('.').reduce((a, p) => a * 256 + Number(p), 0)
      const masked = bits === 0 ? 0 : n - (n % 2 ** (32 - bits))
      return [24, 16, 8, 0].map((s) => String(Math.floor(masked / 2 ** s) % 256)).join('.')
    }
    let big = 0n
    const full = address.includes('::')
      ? (() => {
          const [l, r] = address.split('::') as [string, string]
          const left = l === '' ? [] : l.split(':')
          const right = r === '' ? [] : r.split(':')
          return [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
        })()
      : address.split(':')
    for (const p of full) big = (big << 16n) | BigInt(parseInt(p, 16))
    const masked = bits === 0 ? 0n : (big >> BigInt(128 - bits)) << BigInt(128 - bits)
    return Array.from({ length: 8 }, (_, i) => ((masked >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':')
  }

  let checks = 0
  let hits = 0
  let differences = 0
  for (let round = 0; round < 40; round++) {
    const block = new BlockList()
    const entries: string[] = []
    for (let i = 0; i < 1 + g.int(4); i++) {
      if (g.int(2) === 0) {
        const bits = g.int(33)
        const net = network(v4(), bits, 'ipv4')
        block.addSubnet(net, bits, 'ipv4')
        entries.push(`${net}/${String(bits)}`)
      } else {
        const bits = g.int(129)
        const net = network(v6(), bits, 'ipv6')
        block.addSubnet(net, bits, 'ipv6')
        entries.push(`${net}/${String(bits)}`)
      }
    }
    const ranges = parseAddressRanges(entries.join(','))
    for (let i = 0; i < 500; i++) {
      const address = g.int(2) === 0 ? v4() : v6()
      const family = isIP(address) === 4 ? 'ipv4' : 'ipv6'
      const expected = block.check(address, family)
      const actual = ranges.has(address)
      checks++
      if (expected) hits++
      if (expected !== actual && differences++ < 5) t.fail(`${address} in ${entries.join(',')}: ${String(actual)}`)
    }
  }
  t.equal(differences, 0, `${String(checks)} checks, ${String(hits)} inside, no difference from BlockList`)
  t.ok(hits > checks / 20, 'enough addresses fell inside a range for the comparison to mean something')
})
