import { request } from 'node:http'
import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'
import { startTestConsole } from '../helpers/console.ts'

/*
 * The console behind an ingress, in front of a real gateway (loopback answers on every 127/8
 * address, so each party gets its own): the console and the gateway on 127.0.0.1, the ingress
 * connecting from 127.0.0.2, another pod of the cluster from 127.0.0.3. The gateway trusts the pod
 * range (127.0.0.0/30: the console, the ingress, that other pod), the console only the ingress.
 * From the ingress the console passes the X-Forwarded-For chain on with the ingress appended, so
 * the gateway's login limit counts the browser's address: two browsers behind one console pod
 * count separately. From the other pod (trusted by the gateway, not by the console) the console
 * sends only that pod's address: what it wrote in X-Forwarded-For counts for nothing, and it
 * cannot pick a fresh address per attempt. X-Forwarded-Proto marks cookies Secure only from the
 * ingress.
 */
const INGRESS = '127.0.0.2'
const OUTSIDER = '127.0.0.3'

interface Answer {
  status: number
  setCookies: string[]
}

function post(
  base: string,
  path: string,
  from: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<Answer> {
  const data = Buffer.from(JSON.stringify(body))
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}${path}`,
      {
        method: 'POST',
        localAddress: from,
        headers: {
          'content-type': 'application/json',
          'content-length': String(data.length),
          'x-console-request': '1',
          ...headers,
        },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode ?? 0, setCookies: res.headers['set-cookie'] ?? [] }))
      },
    )
    req.on('error', reject)
    req.end(data)
  })
}

t.test('the console passes the client address on from a trusted ingress, and only from one', async (t) => {
  const env = await startTestPlatform(t, {
    AUTH_MODE: 'password',
    TRUSTED_PROXIES: '127.0.0.0/30',
    RATE_LIMIT_LOGIN_IP_MAX: '2',
    RATE_LIMIT_LOGIN_EMAIL_MAX: '100',
    // a day's window: no rollover resets the counts mid-test
    RATE_LIMIT_WINDOW_SECONDS: '86400',
  })
  const { base } = await startTestConsole(t, env, { trustedProxies: INGRESS })
  let attempt = 0
  const login = async (from: string, forwardedFor?: string) =>
    (
      await post(base, '/session/login', from, forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }, {
        email: `nobody-${String(++attempt)}@test.local`,
        password: 'wrong',
      })
    ).status

  // two browsers behind the ingress: the ingress writes each one's address
  t.equal(await login(INGRESS, '198.51.100.1'), 401)
  t.equal(await login(INGRESS, '198.51.100.1'), 401)
  t.equal(await login(INGRESS, '198.51.100.1'), 429, "the first browser's limit (2) is reached")
  t.equal(await login(INGRESS, '198.51.100.2'), 401, 'another browser behind the same console counts separately')
  t.equal(
    await login(INGRESS, '203.0.113.77, 198.51.100.1'),
    429,
    'a browser that sends its own X-Forwarded-For (the ingress appends its address) is still itself',
  )
  t.equal(await login(INGRESS), 401, 'no header from the ingress: the ingress itself counts, once')

  // a peer the console does not trust (the gateway does): its X-Forwarded-For is replaced by its own address
  t.equal(await login(OUTSIDER, '203.0.113.1'), 401)
  t.equal(await login(OUTSIDER, '203.0.113.1'), 401)
  t.equal(
    await login(OUTSIDER, '203.0.113.2'),
    429,
    'a spoofed header from an untrusted peer does not count: its own address does',
  )
  t.equal(await login(INGRESS, '203.0.113.1'), 401, 'and the spoofed address was never counted')

  // X-Forwarded-Proto: believed from the ingress only (signing out clears the cookies either way)
  const logout = (from: string) => post(base, '/session/logout', from, { 'x-forwarded-proto': 'https' }, {})
  const viaIngress = await logout(INGRESS)
  t.equal(viaIngress.status, 204)
  t.ok(
    viaIngress.setCookies.length === 2 && viaIngress.setCookies.every((c) => /; Secure/.test(c)),
    'behind the TLS-terminating ingress: Secure cookies',
  )
  const direct = await logout(OUTSIDER)
  t.ok(
    direct.setCookies.length === 2 && direct.setCookies.every((c) => !/Secure/.test(c)),
    "an untrusted peer's X-Forwarded-Proto is not believed",
  )
})
