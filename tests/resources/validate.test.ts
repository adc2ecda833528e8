import { Type as T } from '@sinclair/typebox'
import t from 'tap'
import type { Principal } from '../../src/auth/principal.ts'
import { checkPythonCode } from '../../src/functions/check-code.ts'
import { createSecretBox } from '../../src/kernel/crypto.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { defineKind } from '../../src/resources/kind.ts'
import { createResourceService } from '../../src/resources/service.ts'
import { ENCRYPTION_KEY, startTestPlatform } from '../helpers/env.ts'

/* A kind's `validate` may be async and the service awaits it; the function code check does not block the event loop. */
const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
const db = env.platform.db
if (db === undefined) throw new Error('no database')
const admin: Principal = { userId: env.adminId, email: 'admin@test.local', permissions: ['platform.*:all'] }

const probeKind = defineKind({
  kind: 'probe',
  plural: 'probes',
  title: 'Probe',
  spec: T.Object({ word: T.String({ default: '' }) }),
  validate: async (spec) => {
    await new Promise((r) => setImmediate(r))
    return spec.word === 'bad' ? [{ path: '/word', message: 'not this word' }] : []
  },
})
const service = createResourceService({
  db,
  log: createLogger({ level: 'silent' }),
  kinds: [probeKind],
  box: createSecretBox(ENCRYPTION_KEY),
})

t.test('an async validate is awaited on create and update', async (t) => {
  await t.rejects(service.create(admin, probeKind, { namespace: 'v', name: 'one', word: 'bad' }), {
    status: 422,
    code: 'request.invalid',
    issues: [{ path: '/word', message: 'not this word' }],
  })
  const ok = await service.create(admin, probeKind, { namespace: 'v', name: 'one', word: 'good' })
  t.equal(ok.word, 'good', 'the record is typed by the kind: ok.word is a string')
  await t.rejects(service.update(admin, probeKind, { namespace: 'v', name: 'one' }, { word: 'bad' }), {
    status: 422,
    code: 'request.invalid',
  })
})

t.test('the Python code check runs without blocking the event loop, several at once', async (t) => {
  let loopTurned = false
  setImmediate(() => (loopTurned = true))
  const results = await Promise.all([
    checkPythonCode('def handler(input, context):\n    return 1\n', 'handler'),
    checkPythonCode('def handler(:\n', 'handler'),
    checkPythonCode('async def handler(input, context):\n    return 1\n', 'handler'),
    checkPythonCode('def other(input, context):\n    return 1\n', 'handler'),
  ])
  t.ok(loopTurned, 'the event loop turned while the checks ran (spawnSync would have held it)')
  t.same(results[0], [])
  t.match(results[1], [{ path: '/code', message: /line 1/ }])
  t.match(results[2], [{ message: /plain def/ }])
  t.match(results[3], [{ message: /no top-level function handler/ }])
  t.match(
    await checkPythonCode('x = 1', 'handler', '/nonexistent/python3'),
    [{ path: '/code', message: /could not run/ }],
    'a missing interpreter is an issue, not a crash',
  )
})

t.test('saving a function with bad code answers 422 through the API', async (t) => {
  const r = await env.request('POST', '/api/v1/functions', {
    body: { namespace: 'v', name: 'broken', code: 'def handler(:\n' },
  })
  t.equal(r.status, 422)
  t.match(r.body, { code: 'request.invalid', errors: [{ path: '/code' }] })
})
