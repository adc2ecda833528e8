import t from 'tap'
import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * JOB_RESULT_TTL_HOURS is the lifetime of a job's state (the JOB_STATE bucket) as well as of its
 * stored result (the JOB_RESULTS object store): GET /jobs/{id} and its result leave together. A
 * delayed job's state is written at its enqueue, so a delay_seconds it would not outlive is refused.
 */
const env = await startTestPlatform(t, { ROLES: 'gateway,resources', JOB_RESULT_TTL_HOURS: '2' })
const names = natsNames(env.config.NATS_PREFIX)

t.test('the job state bucket and the result store keep JOB_RESULT_TTL_HOURS', async (t) => {
  const status = await (await new Kvm(env.platform.nc).open(names.bucket('JOB_STATE'))).status()
  t.equal(status.ttl, 2 * 3600_000, 'JOB_STATE entries live 2 h')
  const jsm = await jetstreamManager(env.platform.nc)
  const results = await jsm.streams.info(`OBJ_${names.bucket('JOB_RESULTS')}`)
  t.equal(results.config.max_age, 2 * 3600 * 1e9, 'JOB_RESULTS objects live 2 h')
})

t.test('a delay longer than the job state lives is refused; a shorter one is scheduled', async (t) => {
  const fn = await env.request('POST', '/api/v1/functions', {
    body: { namespace: 'ttl', name: 'later', code: 'def handler(event, context):\n    return 1\n' },
  })
  t.equal(fn.status, 201, fn.text)
  const tooLong = await env.request('POST', '/functions/ttl/later/execute/async', {
    body: { input: {}, delay_seconds: 3 * 3600 },
  })
  t.equal(tooLong.status, 422)
  t.match(tooLong.body, { code: 'job.delay_too_long', errors: [{ path: 'delay_seconds', message: 'at most 7140' }] })
  const fits = await env.request('POST', '/functions/ttl/later/execute/async', {
    body: { input: {}, delay_seconds: 3600 },
  })
  t.equal(fits.status, 202, fits.text)
  const job = await env.request('GET', `/jobs/${(fits.body as { execution_id: string }).execution_id}`)
  t.equal((job.body as { status: string }).status, 'scheduled')
})
