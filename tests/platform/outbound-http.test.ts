import dns from 'node:dns'
import http from 'node:http'
import { syncBuiltinESMExports } from 'node:module'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { isDatabaseUnavailable } from '../../src/platform/db.ts'
import {
  blockedReason,
  guardedFetch,
  parseHostList,
  resolveTarget,
  setOutboundDnsCache,
  type ResolvedAddress,
} from '../../src/platform/outbound-http.ts'
import { prepareLocalTls, startReceiver } from '../helpers/local-https.ts'

/*
 * The guarded outbound HTTP client: the address classifier, refusals before any
 * connection (scheme, allowlist, names resolving to non-public addresses, IP literals in every
 * spelling), and real HTTPS exchanges with a receiver on a documentation address: pinning (the
 * connection goes to the checked address, Node never resolves the name again), certificate checks
 * against the original name, redirects re-checked, the deadline and the size cap.
 */
const ADDRESS = '198.51.100.8'
const tls = prepareLocalTls(t, ADDRESS, ['api.test', 'rebind.test'])

/** A fixed DNS table; counts the lookups. */
function table(entries: Record<string, string[]>) {
  const calls: string[] = []
  const lookup = async (host: string): Promise<ResolvedAddress[]> => {
    calls.push(host)
    const list = entries[host]
    if (list === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  return { lookup, calls }
}

t.test('the address classifier', async (t) => {
  const blocked = [
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '10.255.255.255',
    '100.64.0.1',
    '100.127.255.254',
    '127.0.0.1',
    '127.8.9.10',
    '169.254.169.254',
    '169.254.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.0.8',
    '192.88.99.1',
    '192.168.1.1',
    '198.18.0.1',
    '198.19.255.255',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '::127.0.0.1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::10.1.2.3',
    '64:ff9b:1::1',
    '2002:7f00:1::1',
    '2002:0a00:0001::',
    '2001::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '100::1',
    'fc00::1',
    'fd12:3456:789a::1',
    'fe80::1',
    'fe80::1%lo',
    'febf:ffff::1',
    'fec0::1',
    'ff02::1',
    'not-an-ip',
    '1.2.3',
  ]
  const allowed = [
    '1.1.1.1',
    '8.8.8.8',
    '9.255.255.255',
    '11.0.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '126.255.255.255',
    '128.0.0.1',
    '169.253.255.255',
    '172.15.255.255',
    '172.32.0.1',
    '192.0.1.1',
    '192.0.2.10',
    '192.167.255.255',
    '192.169.0.1',
    '198.17.255.255',
    '198.20.0.1',
    '198.51.100.7',
    '203.0.113.9',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '2001:db8::1',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '::ffff:198.51.100.7',
    '64:ff9b::8.8.8.8',
    '64:ff9b::808:808',
    '2002:0808:0808::1',
  ]
  for (const a of blocked) t.not(blockedReason(a), null, `${a} is blocked (${String(blockedReason(a))})`)
  for (const a of allowed) t.equal(blockedReason(a), null, `${a} is allowed`)
  t.match(blockedReason('169.254.169.254'), /link-local/)
  t.match(blockedReason('::ffff:127.0.0.1'), /IPv4-mapped loopback/)
  t.match(blockedReason('64:ff9b::a9fe:a9fe'), /NAT64 link-local/)
})

t.test('allowlist settings', async (t) => {
  t.same(parseHostList(''), [])
  t.same(parseHostList(' , '), [])
  t.equal(parseHostList('*'), '*')
  t.equal(parseHostList('a.example, *'), '*')
  t.same(parseHostList('Hooks.Example.com, api.example.org.,[2001:db8::1]'), [
    'hooks.example.com',
    'api.example.org',
    '2001:db8::1',
  ])
})

t.test('refusals before any connection', async (t) => {
  const dns = table({
    'loop.test': ['127.0.0.1'],
    'ten.test': ['10.1.2.3'],
    'meta.test': ['169.254.169.254'],
    'v6loop.test': ['::1'],
    'mapped.test': ['::ffff:127.0.0.1'],
    'nat64.test': ['64:ff9b::a9fe:a9fe'],
    'ula.test': ['fd00::1'],
    'cgnat.test': ['100.64.1.1'],
    'mixed.test': ['203.0.113.5', '10.0.0.1'],
    'public.test': ['203.0.113.5', '2001:db8::5'],
  })
  const refuse = async (url: string, code: string, opts: Parameters<typeof resolveTarget>[1] = {}) =>
    t.rejects(resolveTarget(url, opts, { lookup: dns.lookup }), { code, status: 400 }, `${url} → ${code}`)

  await refuse('http://public.test/', 'outbound.not_https')
  await refuse('ftp://public.test/', 'outbound.invalid_url')
  await refuse('file:///etc/passwd', 'outbound.invalid_url')
  await refuse('not a url', 'outbound.invalid_url')
  await refuse('https://other.test/', 'outbound.host_not_allowed', { allowHosts: ['public.test'] })
  await refuse('https://public.test.evil.test/', 'outbound.host_not_allowed', { allowHosts: ['public.test'] })
  await refuse('https://public.test/', 'outbound.host_not_allowed', { allowHosts: [] })
  for (const host of ['loop', 'ten', 'meta', 'v6loop', 'mapped', 'nat64', 'ula', 'cgnat', 'mixed'])
    await refuse(`https://${host}.test/hook`, 'outbound.private_address')
  await t.rejects(
    resolveTarget('https://nowhere.test/', {}, { lookup: dns.lookup }),
    { code: 'upstream.dns_failed', status: 502, message: /nowhere\.test/ },
    'a host that does not resolve: 502 naming it',
  )
  const dnsErr = await resolveTarget(
    'https://nowhere.test/',
    {},
    {
      lookup: async () =>
        Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' })),
    },
  ).catch((e: unknown) => e)
  t.match(dnsErr, { code: 'upstream.dns_failed', cause: { code: 'ENOTFOUND' } })
  t.notOk(isDatabaseUnavailable(dnsErr), "the resolver's ENOTFOUND inside it is not taken for the database being down")
  // IP literals, in the spellings the URL parser normalises (no DNS involved)
  for (const url of [
    'https://127.0.0.1/',
    'https://127.1/',
    'https://0x7f.0.0.1/',
    'https://2130706433/',
    'https://017700000001/',
    'https://[::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://169.254.169.254/latest/meta-data/',
    'https://[fe80::1]/',
    'https://0.0.0.0/',
    'https://[64:ff9b::7f00:1]/',
  ]) {
    await refuse(url, 'outbound.private_address')
  }
  // the real resolver: localhost is loopback
  await t.rejects(
    resolveTarget('https://localhost:8443/'),
    { code: 'outbound.private_address' },
    'localhost via the system resolver',
  )
  // a permitted target: every address, allowlist case-insensitive, trailing dot
  const ok = await resolveTarget('https://PUBLIC.test./x?y=1', { allowHosts: ['public.test'] }, { lookup: dns.lookup })
  t.equal(ok.host, 'public.test')
  t.same(
    ok.addresses.map((a) => a.address),
    ['203.0.113.5', '2001:db8::5'],
  )
  t.ok(
    await resolveTarget('http://public.test/', { httpsOnly: false }, { lookup: dns.lookup }),
    'plain HTTP when the caller allows it',
  )
  // guardedFetch refuses the same way, without connecting
  await t.rejects(guardedFetch('https://meta.test/', { timeoutMs: 1000 }, { lookup: dns.lookup }), {
    code: 'outbound.private_address',
  })
})

t.test('real exchanges with a receiver on a documentation address', { skip: tls.skip }, async (t) => {
  const receiver = await startReceiver(t, tls)
  const port = receiver.port
  const base = `https://api.test:${String(port)}`
  const dns = table({
    'api.test': [ADDRESS],
    'rebind.test': [ADDRESS],
    'other.test': [ADDRESS],
    'loopy.test': ['127.0.0.1'],
  })
  const deps = { lookup: dns.lookup, ca: tls.cert }

  t.test('pinned connection, SNI and certificate for the name', async (t) => {
    receiver.handler = (r, res) => res.end(JSON.stringify({ host: r.headers.host, method: r.method, body: r.body }))
    const res = await guardedFetch(
      `${base}/echo?q=1`,
      {
        method: 'POST',
        body: 'hello',
        headers: { 'content-type': 'text/plain' },
        timeoutMs: 5000,
        allowHosts: ['api.test'],
      },
      deps,
    )
    t.equal(res.status, 200)
    t.same(JSON.parse(res.body.toString('utf8')), { host: `api.test:${String(port)}`, method: 'POST', body: 'hello' })
    t.same(dns.calls, ['api.test'], 'resolved once, by the guard')
    t.equal(receiver.received.at(-1)?.url, '/echo?q=1')
  })

  t.test('the socket goes to the checked address: a name the system resolver does not know still works', async (t) => {
    // rebind.test exists only in the guard's table: had Node resolved the name again (where a
    // rebinding DNS server could answer differently), the request would fail.
    receiver.handler = (_r, res) => res.end('pinned')
    const res = await guardedFetch(`https://rebind.test:${String(port)}/`, { timeoutMs: 5000 }, deps)
    t.equal(res.body.toString('utf8'), 'pinned')
    t.same(
      dns.calls.filter((h) => h === 'rebind.test'),
      ['rebind.test'],
    )
  })

  t.test('the streaming exchange: pinned, SNI and certificate for the name, an IP literal by its SAN', async (t) => {
    const { guardedStream } = await import('../../src/platform/outbound-http.ts')
    receiver.handler = (r, res) => res.end(JSON.stringify({ host: r.headers.host, method: r.method, body: r.body }))
    const text = async (url: string, d: typeof deps | { lookup: typeof dns.lookup }) => {
      const s = await guardedStream(url, { method: 'POST', body: 'hi', headTimeoutMs: 5000, idleTimeoutMs: 5000 }, d)
      let out = ''
      for await (const chunk of s.body) out += chunk.toString('utf8')
      return { status: s.status, out }
    }
    const res = await text(`https://rebind.test:${String(port)}/s?x=1`, deps)
    t.equal(res.status, 200)
    t.same(
      JSON.parse(res.out),
      { host: `rebind.test:${String(port)}`, method: 'POST', body: 'hi' },
      'Host is the name; the socket went to the checked address',
    )
    t.equal(receiver.received.at(-1)?.url, '/s?x=1')
    t.equal(
      (await text(`https://${ADDRESS}:${String(port)}/`, deps)).status,
      200,
      'an IP literal is checked against the IP SAN',
    )
    await t.rejects(
      text(`https://other.test:${String(port)}/`, deps),
      { code: 'outbound.connect_failed' },
      'the certificate is checked against the original name',
    )
    await t.rejects(
      text(`${base}/`, { lookup: dns.lookup }),
      { code: 'outbound.connect_failed' },
      'self-signed, not trusted without the extra CA',
    )
  })

  t.test('certificate checks', async (t) => {
    const wrongName = await guardedFetch(`https://other.test:${String(port)}/`, { timeoutMs: 5000 }, deps).catch(
      (err: unknown) => err,
    )
    t.match(wrongName, { code: 'outbound.connect_failed' }, 'the certificate is checked against the original name')
    t.match((wrongName as Error).message, /altnames|does not match|Hostname/i)
    await t.rejects(
      guardedFetch(`${base}/`, { timeoutMs: 5000 }, { lookup: dns.lookup }),
      { code: 'outbound.connect_failed' },
      'self-signed, not trusted without the extra CA',
    )
    const byIp = await guardedFetch(`https://${ADDRESS}:${String(port)}/`, { timeoutMs: 5000 }, deps)
    t.equal(byIp.status, 200, 'an IP literal is checked against the IP SAN')
  })

  t.test('redirects: not followed by default; re-checked when followed', async (t) => {
    receiver.handler = (r, res) => {
      const to: Record<string, string> = {
        '/to-next': `${base}/next`,
        '/to-loop': `https://loopy.test:${String(port)}/`,
        '/to-literal': `https://127.0.0.1:${String(port)}/`,
        '/to-http': `http://api.test:${String(port)}/`,
        '/to-self': '/to-self',
        '/to-other-origin': `https://rebind.test:${String(port)}/there`,
      }
      const target = to[r.url]
      if (target !== undefined) {
        res.writeHead(302, { location: target })
        res.end()
      } else res.end(JSON.stringify({ url: r.url, method: r.method, auth: r.headers.authorization ?? null }))
    }
    const first = await guardedFetch(`${base}/to-next`, { timeoutMs: 5000 }, deps)
    t.equal(first.status, 302, 'maxRedirects 0 returns the 3xx')
    const followed = await guardedFetch(
      `${base}/to-next`,
      { method: 'POST', body: 'x', headers: { authorization: 'Bearer t' }, timeoutMs: 5000, maxRedirects: 3 },
      deps,
    )
    t.equal(followed.status, 200)
    t.same(
      JSON.parse(followed.body.toString('utf8')),
      { url: '/next', method: 'GET', auth: 'Bearer t' },
      '302 after POST continues as GET; same origin keeps Authorization',
    )
    t.equal(followed.url, `${base}/next`)
    const crossed = await guardedFetch(
      `${base}/to-other-origin`,
      { headers: { authorization: 'Bearer t' }, timeoutMs: 5000, maxRedirects: 3 },
      deps,
    )
    t.same(
      JSON.parse(crossed.body.toString('utf8')),
      { url: '/there', method: 'GET', auth: null },
      'Authorization is dropped when the origin changes',
    )
    await t.rejects(
      guardedFetch(`${base}/to-loop`, { timeoutMs: 5000, maxRedirects: 3 }, deps),
      { code: 'outbound.private_address' },
      'a hop resolving to loopback',
    )
    await t.rejects(
      guardedFetch(`${base}/to-literal`, { timeoutMs: 5000, maxRedirects: 3 }, deps),
      { code: 'outbound.private_address' },
      'a hop to a loopback literal',
    )
    await t.rejects(
      guardedFetch(`${base}/to-http`, { timeoutMs: 5000, maxRedirects: 3 }, deps),
      { code: 'outbound.not_https' },
      'a hop to plain HTTP',
    )
    await t.rejects(guardedFetch(`${base}/to-self`, { timeoutMs: 5000, maxRedirects: 2 }, deps), {
      code: 'outbound.too_many_redirects',
    })
  })

  t.test('deadline and size cap', async (t) => {
    receiver.handler = (r, res) => {
      if (r.url === '/big') res.end('x'.repeat(5000))
      else if (r.url === '/drip') {
        res.write('x'.repeat(600))
        setTimeout(() => res.end('y'.repeat(600)), 50)
      }
      // anything else: never answered
    }
    const started = Date.now()
    await t.rejects(guardedFetch(`${base}/hang`, { timeoutMs: 500 }, deps), { code: 'outbound.timeout', status: 504 })
    const took = Date.now() - started
    t.ok(took >= 450 && took < 3000, `gave up after the deadline (${String(took)} ms)`)
    await t.rejects(
      guardedFetch(`${base}/big`, { timeoutMs: 5000, maxResponseBytes: 1000 }, deps),
      { code: 'outbound.response_too_large' },
      'declared length over the cap',
    )
    await t.rejects(
      guardedFetch(`${base}/drip`, { timeoutMs: 5000, maxResponseBytes: 1000 }, deps),
      { code: 'outbound.response_too_large' },
      'streamed body over the cap',
    )
    const headOnly = await guardedFetch(`${base}/big`, { timeoutMs: 5000, maxResponseBytes: 10, readBody: false }, deps)
    t.equal(headOnly.status, 200, 'readBody: false takes the status without the body')
    t.equal(headOnly.body.length, 0)
  })

  t.test('plain HTTP only when the caller allows it, still on a public address', async (t) => {
    const server = http.createServer((_req, res) => res.end('plain'))
    await new Promise<void>((resolve) => server.listen(0, ADDRESS, () => resolve()))
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
    const url = `http://api.test:${String((server.address() as AddressInfo).port)}/`
    await t.rejects(guardedFetch(url, { timeoutMs: 5000 }, deps), { code: 'outbound.not_https' })
    const res = await guardedFetch(url, { timeoutMs: 5000, httpsOnly: false }, deps)
    t.equal(res.body.toString('utf8'), 'plain')
  })
})

t.test('keep-alive: concurrent calls reuse their connections instead of reopening them', async (t) => {
  const { guardedStream } = await import('../../src/platform/outbound-http.ts')
  let connections = 0
  const server = http.createServer((req, res) => {
    req.resume()
    // answered a little later, so the calls of a round are all in flight together
    req.on('end', () => setTimeout(() => res.end('{"ok":true}'), 5))
  })
  server.on('connection', () => void connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  server.keepAliveTimeout = 30_000
  const url = `http://local.test:${String((server.address() as AddressInfo).port)}/chat`
  const dns = table({ 'local.test': ['127.0.0.1'] })
  let answered = 0
  const one = async () => {
    const s = await guardedStream(
      url,
      { method: 'POST', body: '{}', headTimeoutMs: 5000, idleTimeoutMs: 5000, httpsOnly: false, allowPrivate: true },
      { lookup: dns.lookup },
    )
    let text = ''
    for await (const chunk of s.body) text += chunk.toString('utf8')
    if (text === '{"ok":true}') answered++
    s.close()
  }
  // 50 concurrent calls, as 50 chats at once: before, only 32 idle sockets were kept, so each round
  // reopened 18. A call made in the tick another one's response ended may find that connection not
  // yet handed back to the pool and open one more (measured: 50 after the first round, then 94-100
  // within ten rounds, and no more), so the bound is twice the calls in flight, against 500
  // connections for 500 calls without reuse.
  for (let round = 0; round < 10; round++) await Promise.all(Array.from({ length: 50 }, one))
  t.equal(answered, 500)
  t.ok(connections <= 100, `at most 100 connections for 10 rounds of 50 concurrent calls (${String(connections)})`)
  server.closeAllConnections()
})

t.test('the streaming exchange: size cap, a slow consumer of a large body, an early break', async (t) => {
  const { guardedStream } = await import('../../src/platform/outbound-http.ts')
  const big = Buffer.alloc(3 * 1024 * 1024, 'x')
  let closedEarly = 0
  const server = http.createServer((req, res) => {
    req.resume()
    res.on('close', () => {
      if (!res.writableFinished) closedEarly++
    })
    if (req.url === '/big') res.end(big)
    else if (req.url === '/endless') {
      const tick = setInterval(() => res.write('chunk\n'), 5)
      res.on('close', () => clearInterval(tick))
    } else res.end('small')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const base = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`
  const open = (path: string, maxResponseBytes?: number) =>
    guardedStream(`${base}${path}`, {
      headTimeoutMs: 5000,
      idleTimeoutMs: 5000,
      httpsOnly: false,
      allowPrivate: true,
      ...(maxResponseBytes === undefined ? {} : { maxResponseBytes }),
    })

  // over the cap: refused while streaming
  const capped = await open('/big', 1024 * 1024)
  await t.rejects(
    (async () => {
      for await (const _ of capped.body) void _
    })(),
    { code: 'outbound.response_too_large' },
  )

  // 3 MB read slowly (the socket is paused while more than the high-water mark waits): all of it, in order
  const slow = await open('/big')
  let got = 0
  let intact = true
  for await (const chunk of slow.body) {
    if (chunk.some((b) => b !== 0x78)) intact = false
    got += chunk.length
    await new Promise((r) => setTimeout(r, 1))
  }
  t.equal(got, big.length, 'every byte')
  t.ok(intact)

  // leaving the loop ends the exchange: the server sees its response closed before it finished
  const endless = await open('/endless')
  let n = 0
  for await (const _ of endless.body) if (++n === 3) break
  const seenClosed = () => closedEarly > 0
  for (let i = 0; i < 100 && !seenClosed(); i++) await new Promise((r) => setTimeout(r, 10))
  t.equal(closedEarly, 1, 'the endless response was cut off by the break')

  // and the pool still serves the next call
  const next = await open('/small')
  let out = ''
  for await (const chunk of next.body) out += chunk.toString('utf8')
  t.equal(out, 'small')
})

t.test(
  'the system resolver is asked once per OUTBOUND_DNS_CACHE_SECONDS, and every answer is still checked',
  async (t) => {
    // the default lookup is node:dns/promises; a stand-in resolver is swapped in for this test
    const promises = dns.promises as { lookup: unknown }
    const original = promises.lookup
    const asked: string[] = []
    const answers: Record<string, string> = { 'provider.test': '93.184.216.34', 'flip.test': '93.184.216.35' }
    promises.lookup = async (host: string) => {
      asked.push(host)
      const address = answers[host]
      if (address === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
      return [{ address, family: 4 }]
    }
    syncBuiltinESMExports()
    t.teardown(() => {
      promises.lookup = original
      syncBuiltinESMExports()
      setOutboundDnsCache(30)
    })

    setOutboundDnsCache(30)
    for (let i = 0; i < 3; i++)
      t.same((await resolveTarget('https://provider.test/v1')).addresses, [{ address: '93.184.216.34', family: 4 }])
    t.same(asked, ['provider.test'], 'three requests, one lookup')
    await t.rejects(resolveTarget('https://missing.test/'), { code: 'upstream.dns_failed' })
    await t.rejects(resolveTarget('https://missing.test/'), { code: 'upstream.dns_failed' })
    t.equal(asked.filter((h) => h === 'missing.test').length, 2, 'a failed lookup is not kept')

    // a kept answer is checked on every use like a fresh one (step 3), so caching cannot let a private address through
    t.same((await resolveTarget('https://flip.test/')).addresses, [{ address: '93.184.216.35', family: 4 }])
    answers['flip.test'] = '10.0.0.7'
    t.same(
      (await resolveTarget('https://flip.test/')).addresses,
      [{ address: '93.184.216.35', family: 4 }],
      'the kept public answer until it expires',
    )
    setOutboundDnsCache(0)
    await t.rejects(
      resolveTarget('https://flip.test/'),
      { code: 'outbound.private_address' },
      'resolved again and refused once the cache is off',
    )
    asked.length = 0
    await resolveTarget('https://provider.test/v1')
    await resolveTarget('https://provider.test/v1')
    t.same(asked, ['provider.test', 'provider.test'], 'OUTBOUND_DNS_CACHE_SECONDS=0: a lookup per request')
  },
)
