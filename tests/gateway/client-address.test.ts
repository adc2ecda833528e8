import t from 'tap'
import { forwardedClient } from '../../gateway/client-address.ts'
import { parseAddressRanges } from '../../src/kernel/address-ranges.ts'

/*
 * The X-Forwarded-For walk (gateway/client-address.ts) behind trusted proxies given as ranges:
 * from the right, trusted hops are skipped and the first untrusted one is the client, whatever a
 * client wrote further left; IPv6 and IPv4-mapped hops; odd spacing and empty hops. The whole
 * path through a real gateway (the peer's trust, the rate limit) is in tests/identity/login.test.ts
 * and tests/console/forwarded-for.test.ts.
 */
t.test('the nearest untrusted hop, from the right', async (t) => {
  const trusted = parseAddressRanges('10.0.0.0/8, fd00::/8, 192.0.2.7')
  const cases: [string, string | undefined, string][] = [
    ['203.0.113.9', '203.0.113.9', 'one hop: the client the proxy saw'],
    ['203.0.113.9, 10.1.2.3', '203.0.113.9', 'a trusted hop (in a range) is skipped'],
    ['203.0.113.9, 10.1.2.3, 192.0.2.7, 10.200.0.1', '203.0.113.9', 'several trusted hops, exact and ranges'],
    ['198.51.100.1, 203.0.113.9', '203.0.113.9', 'a spoofed leftmost entry does not win'],
    ['10.9.9.9, 203.0.113.9', '203.0.113.9', 'nor a spoofed trusted-looking one left of the client'],
    ['198.51.100.1, 203.0.113.9, 10.1.2.3', '203.0.113.9', 'spoofed left, client, trusted proxy'],
    ['2001:db8::7, fd00::1', '2001:db8::7', 'IPv6: a hop in an IPv6 range is skipped'],
    ['2001:DB8::7', '2001:db8::7', 'an IPv6 client in lower case (one spelling per client)'],
    ['203.0.113.9, ::ffff:10.1.2.3', '203.0.113.9', 'an IPv4-mapped hop is in the IPv4 range'],
    ['::ffff:203.0.113.9, 10.1.2.3', '203.0.113.9', 'an IPv4-mapped client in its plain spelling'],
    ['  203.0.113.9 ,10.1.2.3  ', '203.0.113.9', 'spaces around hops'],
    ['203.0.113.9,, ,10.1.2.3,', '203.0.113.9', 'empty hops are skipped'],
    ['unknown, 10.1.2.3', 'unknown', 'a hop that is no address is not trusted: it is the client'],
    ['10.1.2.3, fd00::2', '10.1.2.3', 'every hop trusted: the leftmost'],
    ['', undefined, 'no header: none (the peer counts)'],
    [' , ', undefined, 'only empty hops: none'],
  ]
  for (const [header, client, what] of cases) t.equal(forwardedClient(header, trusted), client, what)
  t.equal(
    forwardedClient('198.51.100.1, 203.0.113.9', parseAddressRanges('203.0.113.0/24')),
    '198.51.100.1',
    'what is trusted decides how far left the walk goes',
  )
})
