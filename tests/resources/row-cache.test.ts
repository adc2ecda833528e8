import { join } from 'node:path'
import t from 'tap'
import { spawnReady } from '../helpers/child.ts'
import { ENCRYPTION_KEY, SECRET_KEY, startTestPlatform } from '../helpers/env.ts'

/*
 * Resource reads come from each process's memory (src/resources/row-cache.ts), kept coherent over
 * NATS. Here the routes are served by two resources processes of their own (the test platform
 * runs the gateway only), so a write lands on one and the read after it on either: every read
 * must see the write before it, whichever process answers.
 */
const SERVICE = join(import.meta.dirname, 'service-process.ts')
const code = 'def handler(input, context):\n    return input\n'

t.test('a write is visible to the next read in every process (read-your-writes across processes)', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources', RPC_IN_PROCESS: 'false' })
  const childEnv = {
    NATS_URL: env.config.NATS_URL,
    NATS_PREFIX: env.config.NATS_PREFIX,
    DATABASE_URL: env.databaseUrl,
    SECRET_KEY,
    ENCRYPTION_KEY,
    DATA_DIR: env.config.DATA_DIR,
  }
  await Promise.all([spawnReady(t, SERVICE, childEnv), spawnReady(t, SERVICE, childEnv)])
  const made = await env.request('POST', '/api/v1/functions', {
    body: { namespace: 'rc', name: 'f', code, description: 'v0' },
  })
  t.equal(made.status, 201, made.text)
  // warm every process's copy of the kind
  for (let i = 0; i < 30; i++) t.equal((await env.request('GET', '/api/v1/functions/rc/f')).status, 200)

  let stale = 0
  for (let i = 1; i <= 60; i++) {
    const patched = await env.request('PUT', '/api/v1/functions/rc/f', { body: { description: `v${String(i)}` } })
    if (patched.status !== 200) t.fail(`PUT ${String(i)}: ${patched.text}`)
    for (let r = 0; r < 3; r++) {
      const got = await env.request('GET', '/api/v1/functions/rc/f')
      if ((got.body as { description?: string }).description !== `v${String(i)}`) stale++
    }
  }
  t.equal(stale, 0, 'no read saw an older description than the write before it')

  for (let i = 0; i < 20; i++) {
    const name = `n${String(i)}`
    t.equal((await env.request('POST', '/api/v1/functions', { body: { namespace: 'rc', name, code } })).status, 201)
    t.equal((await env.request('GET', `/api/v1/functions/rc/${name}`)).status, 200, `created ${name} is found at once`)
    const listed = await env.request('GET', '/api/v1/functions?namespace=rc')
    t.ok(
      (listed.body as { name: string }[]).some((f) => f.name === name),
      `created ${name} is listed at once`,
    )
    t.equal((await env.request('DELETE', `/api/v1/functions/rc/${name}`)).status, 204)
    t.equal((await env.request('GET', `/api/v1/functions/rc/${name}`)).status, 404, `deleted ${name} is gone at once`)
  }
})

t.test('setting a new default clears the old one in every process (a change to other rows of the kind)', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources', RPC_IN_PROCESS: 'false' })
  const childEnv = {
    NATS_URL: env.config.NATS_URL,
    NATS_PREFIX: env.config.NATS_PREFIX,
    DATABASE_URL: env.databaseUrl,
    SECRET_KEY,
    ENCRYPTION_KEY,
    DATA_DIR: env.config.DATA_DIR,
  }
  await spawnReady(t, SERVICE, childEnv)
  const provider = (name: string) => ({
    name,
    provider_type: 'openai',
    api_endpoint: 'http://127.0.0.1:9/v1',
    api_key: 'k',
    default_model: 'm',
    is_default: true,
  })
  t.equal((await env.request('POST', '/api/v1/llm-providers', { body: provider('first') })).status, 201)
  for (let i = 0; i < 10; i++)
    t.equal(
      ((await env.request('GET', '/api/v1/llm-providers/first')).body as { is_default: boolean }).is_default,
      true,
    )
  t.equal((await env.request('POST', '/api/v1/llm-providers', { body: provider('second') })).status, 201)
  for (let i = 0; i < 10; i++) {
    t.equal(
      ((await env.request('GET', '/api/v1/llm-providers/first')).body as { is_default: boolean }).is_default,
      false,
      'the old default is cleared everywhere',
    )
  }
})
