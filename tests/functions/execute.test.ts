import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Functions end to end through the gateway: save (syntax and schema checks), run synchronously and
 * asynchronously (delayed too), input and output validation, errors and timeouts, permissions,
 * and what a function sees of its caller.
 */
let env: TestPlatform
const double = {
  namespace: 'demo',
  name: 'double',
  code: 'def handler(input, context):\n    print("hello from", context["function"]["name"])\n    return {"y": input["x"] * 2, "user": context["user_email"], "has_token": bool(context["access_token"])}\n',
  input_schema: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] },
  output_schema: { type: 'object', required: ['y'] },
}

t.before(async () => {
  env = await startTestPlatform(t)
  const res = await env.request('POST', '/api/v1/functions', { body: double })
  if (res.status !== 201) throw new Error(res.text)
})

t.test('saving checks the code and the schemas', async (t) => {
  const bad = await env.request('POST', '/api/v1/functions', {
    body: { ...double, name: 'broken', code: 'def handler(:\n' },
  })
  t.equal(bad.status, 422, 'a syntax error is refused')
  t.match(bad.text, /line 1/, 'with the line')
  const noEntry = await env.request('POST', '/api/v1/functions', {
    body: { ...double, name: 'noentry', code: 'def other(a, b):\n    return 1\n' },
  })
  t.equal(noEntry.status, 422)
  t.match(noEntry.text, /no top-level function handler/)
  const badSchema = await env.request('POST', '/api/v1/functions', {
    body: { ...double, name: 'badschema', input_schema: { type: 'no-such-type' } },
  })
  t.equal(badSchema.status, 422, 'an invalid JSON Schema is refused')
  const versions = await env.request('PUT', '/api/v1/functions/demo/double', {
    body: { code: double.code.replace('* 2', '* 2 ') },
  })
  t.equal(versions.status, 200)
  const list = await env.request('GET', '/api/v1/functions/demo/double/versions')
  t.ok((list.body as unknown[]).length >= 2, 'a code change appends a version')
})

t.test('synchronous execution returns the result and the caller is the context user', async (t) => {
  const res = await env.request('POST', '/functions/demo/double/execute', { body: { input: { x: 21 } } })
  t.equal(res.status, 200, res.text)
  const body = res.body as {
    status: string
    result: { y: number; user: string; has_token: boolean }
    execution_id: string
    output: string
    duration_ms: number
  }
  t.equal(body.status, 'success')
  t.same(body.result, { y: 42, user: 'admin@test.local', has_token: true })
  t.equal(body.output, 'hello from double\n', 'what the function printed')
  t.ok(Number.isInteger(body.duration_ms) && body.duration_ms >= 0, `duration_ms ${String(body.duration_ms)}`)
  const rec = await eventually(async () => {
    const r = await env.request('GET', `/executions/${body.execution_id}`)
    return (r.body as { status: string }).status === 'completed' ? (r.body as Record<string, unknown>) : undefined
  }, 'the execution record')
  t.same(rec['output_data'], { y: 42, user: 'admin@test.local', has_token: true })
  t.same(rec['input_data'], { x: 21 }, 'input_data is the input only')
  t.equal(rec['output'], 'hello from double\n', 'the record keeps what it printed')
})

t.test('input is validated against input_schema before anything runs', async (t) => {
  const res = await env.request('POST', '/functions/demo/double/execute', { body: { input: { x: 'nope' } } })
  t.equal(res.status, 422)
  t.equal((res.body as { code: string }).code, 'function.invalid_input')
  t.match(JSON.stringify((res.body as { errors: unknown }).errors), /\/input\/x/)
})

t.test('errors, output validation and timeouts come back with their status', async (t) => {
  const mk = async (name: string, code: string, extra: Record<string, unknown> = {}) => {
    const r = await env.request('POST', '/api/v1/functions', { body: { namespace: 'demo', name, code, ...extra } })
    t.equal(r.status, 201, r.text)
  }
  await mk('raises', 'def handler(input, context):\n    raise ValueError("no such order")\n')
  await mk('badout', 'def handler(input, context):\n    return {"nope": 1}\n', {
    output_schema: { type: 'object', required: ['y'] },
  })
  await mk('slow', 'import time\ndef handler(input, context):\n    time.sleep(30)\n', { timeout: 1 })
  await mk('notjson', 'def handler(input, context):\n    return {1, 2}\n')
  await mk(
    'chatty',
    'import sys\ndef handler(input, context):\n    print("x" * 100_000)\n    print("to stderr", file=sys.stderr)\n    raise RuntimeError("after printing")\n',
  )
  await mk('quiet', 'def handler(input, context):\n    return 1\n')
  const run = async (name: string) =>
    (await env.request('POST', `/functions/demo/${name}/execute`, { body: { input: {} } })).body as {
      status: string
      error: string
      output?: string
    }
  const raised = await run('raises')
  t.equal(raised.status, 'error')
  t.match(raised.error, /^ValueError: no such order/)
  // a failed run answers its output too, cut at 64 KB with the count of what was dropped
  const chatty = await run('chatty')
  t.equal(chatty.status, 'error')
  t.match(chatty.error, /^RuntimeError: after printing/)
  t.ok(chatty.output?.startsWith('x'.repeat(1000)), 'stdout')
  t.ok((chatty.output?.length ?? 0) <= 64 * 1024 + 100, `cut at 64 KB (${String(chatty.output?.length)} characters)`)
  t.match(chatty.output ?? '', /\[output truncated: \d+ bytes dropped\]/)
  t.notOk('output' in (await run('quiet')), 'no output field when nothing was printed')
  // Postgres text refuses NUL: a printed NUL reaches the record as U+FFFD instead of failing the mirror
  await mk('nul', 'def handler(input, context):\n    print("a\\0b")\n    return 1\n')
  const nul = (await env.request('POST', '/functions/demo/nul/execute', { body: { input: {} } })).body as {
    execution_id: string
    output: string
  }
  t.equal(nul.output, 'a\uFFFDb\n')
  const rec = await eventually(async () => {
    const r = await env.request('GET', `/executions/${nul.execution_id}`)
    return (r.body as { status: string }).status === 'completed' ? (r.body as { output: string | null }) : undefined
  }, 'the record of the run that printed a NUL')
  t.equal(rec.output, 'a\uFFFDb\n')
  const quiet = (await env.request('POST', '/functions/demo/quiet/execute', { body: { input: {} } })).body as {
    execution_id: string
  }
  const quietRec = await eventually(async () => {
    const r = await env.request('GET', `/executions/${quiet.execution_id}`)
    return (r.body as { status: string }).status === 'completed' ? (r.body as { output: string | null }) : undefined
  }, 'the record of a quiet run')
  t.equal(quietRec.output, null, 'null in the record when nothing was printed')
  t.notMatch(raised.error, /runner\.py/, "the runner's own frames are not in the traceback")
  t.match((await run('badout')).error, /OutputValidationError/)
  const slow = await run('slow')
  t.equal(slow.status, 'timeout', JSON.stringify(slow))
  t.match((await run('notjson')).error, /not JSON/)
  // the pool recovered from the timed-out sandbox
  t.equal(
    (
      (await env.request('POST', '/functions/demo/double/execute', { body: { input: { x: 1 } } })).body as {
        status: string
      }
    ).status,
    'success',
  )
})

t.test('async execution: 202 queued, delay, trigger_id, retries then the DLQ', async (t) => {
  const res = await env.request('POST', '/functions/demo/double/execute/async', {
    body: { input: { x: 5 }, trigger_id: 'nightly' },
  })
  t.equal(res.status, 202)
  const { execution_id, status } = res.body as { execution_id: string; status: string }
  t.equal(status, 'queued')
  const rec = await eventually(async () => {
    const r = await env.request('GET', `/executions/${execution_id}`)
    return (r.body as { status: string }).status === 'completed' ? (r.body as Record<string, unknown>) : undefined
  }, 'the async execution')
  t.equal(rec['trigger_id'], 'nightly')
  const result = await env.request('GET', `/jobs/${execution_id}/result`)
  t.same((result.body as { y: number }).y, 10)

  const delayed = await env.request('POST', '/functions/demo/double/execute/async', {
    body: { input: { x: 1 }, delay_seconds: 1 },
  })
  const job = await env.request('GET', `/jobs/${(delayed.body as { execution_id: string }).execution_id}`)
  t.equal((job.body as { status: string }).status, 'scheduled', 'a delayed execution waits')

  const noCallbacks = await env.request('POST', '/functions/demo/double/execute/async', {
    body: { input: { x: 1 }, callback_url: 'https://example.com/cb' },
  })
  t.equal(noCallbacks.status, 400, 'callback_url while CALLBACK_URL_HOSTS is empty')
})

t.test('another user can neither see nor run my function', async (t) => {
  const b = await env.createUser('fn-b@test.local')
  const res = await env.request('POST', '/functions/demo/double/execute', { token: b.token, body: { input: { x: 1 } } })
  t.equal(res.status, 404)
  const own = await env.request('POST', '/api/v1/functions', {
    token: b.token,
    body: { namespace: 'bee', name: 'mine', code: 'def handler(input, context):\n    return context["user_email"]\n' },
  })
  t.equal(own.status, 201, own.text)
  const mine = await env.request('POST', '/functions/bee/mine/execute', { token: b.token, body: { input: null } })
  t.same((mine.body as { result: string }).result, 'fn-b@test.local', 'a user runs its own function as itself')
  const shared = await env.request('POST', '/api/v1/functions', {
    token: b.token,
    body: {
      namespace: 'bee',
      name: 'trusted',
      shared_pool: true,
      code: 'def handler(input, context):\n    return 1\n',
    },
  })
  t.equal(shared.status, 403, 'shared_pool is admin-only')
})
