import t from 'tap'
import { loadConfig } from '../../src/kernel/config.ts'
import { originGuard } from '../../src/mcp/origin.ts'
import { ENCRYPTION_KEY, SECRET_KEY } from '../helpers/env.ts'

/*
 * The Origin rule of /mcp (src/mcp/origin.ts) for each configuration: no Origin passes; the
 * platform's own origin and CORS_ORIGINS pass; loopback origins only while no public origin is
 * configured; `null` and anything else never.
 */
const guard = (env: Record<string, string>) =>
  originGuard(loadConfig({ SECRET_KEY, ENCRYPTION_KEY, DATABASE_PASSWORD: 'unused', ...env }))

t.test('development (no PUBLIC_BASE_URL, no DOMAIN): loopback origins', async (t) => {
  const ok = guard({})
  for (const o of [
    undefined,
    '',
    'http://localhost:8000',
    'http://127.0.0.1:3000',
    'https://[::1]',
    'http://localhost',
  ])
    t.ok(ok(o), String(o))
  for (const o of ['null', 'http://evil.example.com', 'http://localhost.evil.example.com', 'file://', 'not a url'])
    t.notOk(ok(o), o)
})

t.test('a public origin: it alone, plus CORS_ORIGINS; loopback no longer', async (t) => {
  const byDomain = guard({ DOMAIN: 'platform.example.com' })
  t.ok(byDomain('https://platform.example.com'))
  t.notOk(byDomain('http://platform.example.com'), 'the scheme counts')
  t.notOk(byDomain('http://localhost:8000'), 'loopback is not the platform once it has a public origin')
  const byBase = guard({ PUBLIC_BASE_URL: 'https://api.example.com:8443/', CORS_ORIGINS: 'https://app.example.com' })
  t.ok(byBase('https://api.example.com:8443'))
  t.ok(byBase('https://app.example.com'), 'CORS_ORIGINS')
  t.notOk(byBase('https://api.example.com'), 'another port is another origin')
  t.notOk(byBase('https://evil.example.com'))
  const any = guard({ DOMAIN: 'platform.example.com', CORS_ORIGINS: '*' })
  t.ok(any('https://anything.example.org'), 'CORS_ORIGINS=*')
  t.notOk(any('null'), 'never null')
})
