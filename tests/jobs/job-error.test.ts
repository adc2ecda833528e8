import t from 'tap'
import { JobFailure, jobErrorOf, jobErrorText, toJobError } from '../../src/jobs/job-state.ts'
import { AppError } from '../../src/kernel/errors.ts'

/* The structured job error: what executors throw becomes {code, type, message}; old string entries still read. */
t.test('thrown errors become {code, type, message}', async (t) => {
  t.same(toJobError(new JobFailure('function.error', 'bad value', 'ValueError')), {
    code: 'function.error',
    type: 'ValueError',
    message: 'bad value',
  })
  t.same(
    toJobError(new AppError(502, 'llm.http_error', 'the provider answered 500')),
    { code: 'llm.http_error', type: '', message: 'the provider answered 500' },
    'a registered code is kept',
  )
  t.same(toJobError(new Error('boom')), { code: 'job.failed', type: '', message: 'boom' })
  t.throws(() => new JobFailure('no.such_code', 'x'), { message: /unregistered error code/ })
})

t.test('state entries written before (a plain string) still read', async (t) => {
  t.same(jobErrorOf('TimeoutError: the function ran longer than its timeout of 1 s'), {
    code: 'job.failed',
    type: '',
    message: 'TimeoutError: the function ran longer than its timeout of 1 s',
  })
  t.equal(jobErrorText('old text'), 'old text')
  t.equal(jobErrorText(null), null)
  t.equal(jobErrorText({ code: 'function.error', type: 'KeyError', message: "'x'" }), "KeyError: 'x'")
  t.equal(jobErrorText({ code: 'job.timeout', type: '', message: 'timed out after 3 s' }), 'timed out after 3 s')
})
