import { join } from 'node:path'
import t from 'tap'
import { spawnReady } from '../helpers/child.ts'
import { KIND_FIXTURES } from '../fixtures/kinds.ts'
import { ENCRYPTION_KEY, SECRET_KEY, startTestPlatform } from '../helpers/env.ts'

/*
 * Principals are answered from each process's memory (src/auth/principal-cache.ts, local tier).
 * Three resources processes serve the routes (this one and two children), so a revocation made
 * through one is followed by requests that land on any of them: every one must refuse at once.
 */
const SERVICE = join(import.meta.dirname, '..', 'resources', 'service-process.ts')

t.test('a revocation made through one process is refused by every process on the next request', async (t) => {
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
  const skillRead = 'platform.skills/*/*.read:all'
  t.equal(
    (await env.request('POST', '/api/v1/roles', { body: { name: 'Readers', permissions: { [skillRead]: true } } }))
      .status,
    201,
  )
  const skill = await env.request('POST', '/api/v1/skills', {
    body: { namespace: 'x', name: 'visible', ...KIND_FIXTURES['skill']?.valid },
  })
  t.equal(skill.status, 201, skill.text)
  const seen = async (token: string) => {
    const res = await env.request('GET', '/api/v1/skills?namespace=x', { token })
    return res.status === 200 && (res.body as unknown[]).length === 1
  }
  let wrong = 0
  const why: string[] = []
  for (let i = 0; i < 15; i++) {
    const u = await env.createUser(`p${String(i)}@test.local`, ['GuestUsers'])
    // an API key of the admin's (GuestUsers may not mint keys)
    const key = (
      await env.request('POST', '/api/v1/api-keys', {
        body: { name: `k${String(i)}`, permissions: { [skillRead]: true } },
      })
    ).body as { id: string; key: string }
    t.equal((await env.request('POST', `/api/v1/roles/Readers/users/${u.id}`)).status, 200)
    // warm every process's copy (requests spread over the three processes)
    for (let r = 0; r < 6; r++)
      if (!(await seen(u.token))) {
        wrong++
        why.push('warm')
      }
    t.equal((await env.request('DELETE', `/api/v1/roles/Readers/users/${u.id}`)).status, 200)
    for (let r = 0; r < 3; r++)
      if (await seen(u.token)) {
        wrong++
        why.push('revoked-role')
      }
    for (let r = 0; r < 3; r++)
      if ((await env.request('GET', '/api/v1/skills', { token: key.key })).status !== 200) {
        wrong++
        why.push('key-before')
      }
    t.equal((await env.request('DELETE', `/api/v1/api-keys/${key.id}`)).status, 204)
    for (let r = 0; r < 3; r++)
      if ((await env.request('GET', '/api/v1/skills', { token: key.key })).status !== 401) {
        wrong++
        why.push('key-after')
      }
    t.equal((await env.request('PATCH', `/api/v1/users/${u.id}`, { body: { is_active: false } })).status, 200)
    for (let r = 0; r < 3; r++)
      if ((await env.request('GET', '/api/v1/agents', { token: u.token })).status !== 401) {
        wrong++
        why.push('deactivated')
      }
  }
  t.same(why, [], 'reasons')
  t.equal(wrong, 0, 'no request after a revocation was served with the old grants, and none before it refused')
})
