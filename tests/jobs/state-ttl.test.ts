import t from 'tap'
import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * JOB_RESULT_TTL_HOURS is the lifetime of a job's state (the JOB_STATE bucket) as well as of its
 * stored result (the JOB_RESULTS object store): GET /jobs/{id} and its result leave together.
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
