import t from 'tap'
import { randomUUID } from 'node:crypto'
import type { JobState } from '../../src/jobs/job-state.ts'
import { MIRROR_MAX_ATTEMPTS } from '../../src/jobs/mirror.ts'
import {
  findUnstorable,
  listUnstorable,
  toStorable,
  toStorableText,
  unstorableReason,
} from '../../src/kernel/storable-text.ts'
import { scanJson } from '../../gateway/json-scan.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * Hostile input (gateway/README.md "Input rules"): text Postgres cannot store (NUL, lone
 * surrogates) is refused at the gateway with the place named, deep JSON is refused before parsing,
 * identifier-like fields are bounded; a function result or a job state Postgres cannot store fails
 * the execution instead of answering success or being retried forever; LLM output has such text
 * replaced.
 */
const llm = await startFakeLlm()
t.teardown(() => llm.close())
const env = await startTestPlatform(t)
const jobs = env.platform.jobs
if (jobs === undefined) throw new Error('no job service')
const enc = (s: string) => new TextEncoder().encode(s)

t.test('storable-text helpers', async (t) => {
  t.equal(unstorableReason('plain 日本語 🙂'), null, 'paired surrogates are fine')
  t.equal(unstorableReason('a\u0000b'), 'a NUL character')
  t.equal(unstorableReason('\ud800'), 'a lone surrogate')
  t.equal(unstorableReason('x\udc00'), 'a lone surrogate')
  t.same(findUnstorable({ a: { b: ['ok', 'x\u0000'] } }), { path: '$.a.b[1]', reason: 'a NUL character' })
  t.same(findUnstorable({ 'k\ud800': 1 }, 'body'), { path: 'body["k\ufffd"]', reason: 'a lone surrogate' })
  t.same(
    listUnstorable({ a: '\u0000', b: [{ c: 'fine' }, '\udc00'], 'd\u0000': 'x' }, 'body').map((u) => u.path),
    ['body.a', 'body.b[1]', 'body["d\ufffd"]'],
    'every place, in document order',
  )
  t.equal(toStorableText('a\u0000b\ud800🙂'), 'a\ufffdb\ufffd🙂')
  t.same(toStorable({ 'k\u0000': ['\udfff'] }), { 'k\ufffd': ['\ufffd'] })
  t.equal(scanJson(enc('{"a":"\\u0000"}')), 'unstorable')
  t.equal(scanJson(enc('{"a":"\\ud83d\\ude00"}')), 'ok', 'an escaped pair is fine')
  t.equal(scanJson(enc('{"a":"\\ud83d"}')), 'unstorable')
  t.equal(scanJson(enc('{"a":"\\udE00"}')), 'unstorable', 'a lone low surrogate, any case')
  t.equal(scanJson(enc('{"a":"\\\\u0000"}')), 'ok', 'an escaped backslash followed by u0000 is plain text')
  t.equal(scanJson(enc('{"a":"[[[["}')), 'ok', 'brackets inside strings do not count')
  t.equal(scanJson(enc('['.repeat(65) + ']'.repeat(65))), 'too_deep')
  t.equal(scanJson(enc('['.repeat(64) + ']'.repeat(64))), 'ok')
})

t.test('the gateway refuses NUL and lone surrogates in body, path and query, naming the place', async (t) => {
  const nul = await env.request('POST', '/api/v1/skills', {
    body: { namespace: 'in', name: 's1', description: 'a\u0000b' },
  })
  t.equal(nul.status, 400, nul.text)
  t.match(nul.body, { code: 'request.invalid_text', errors: [{ path: 'body.description', message: /NUL/ }] })
  const two = await env.request('POST', '/api/v1/skills', {
    body: { namespace: 'in', name: 's1', description: '\ud800', content: 'x\u0000' },
  })
  t.same(
    (two.body as { errors: { path: string }[] }).errors.map((e) => e.path),
    ['body.description', 'body.content'],
    'every place is named',
  )
  const lone = await env.request('POST', '/api/v1/functions', {
    body: {
      namespace: 'in',
      name: 'f1',
      code: 'def handler(i, c):\n    return 1\n',
      input_schema: { properties: { '\ud800x': {} } },
    },
  })
  t.equal(lone.status, 400, lone.text)
  t.match(lone.body, {
    code: 'request.invalid_text',
    errors: [{ path: /^body\.input_schema\.properties\[/, message: /lone surrogate/ }],
  })
  const query = await env.request('GET', '/api/v1/agents?namespace=%00')
  t.equal(query.status, 400, query.text)
  t.match(query.body, { code: 'request.invalid_text', errors: [{ path: 'query.namespace' }] })
  const path = await env.request('GET', '/api/v1/agents/in/a%00b')
  t.equal(path.status, 400, path.text)
  t.match(path.body, { code: 'request.invalid_text', errors: [{ path: 'path.name' }] })
  // the same text without the bad characters goes through
  const fine = await env.request('POST', '/api/v1/skills', {
    body: { namespace: 'in', name: 's2', description: 'ok 🙂 \\u0000 as text' },
  })
  t.equal(fine.status, 201, fine.text)
  t.equal((fine.body as { description: string }).description, 'ok 🙂 \\u0000 as text')
})

t.test('deep JSON is refused before parsing; huge identifiers are bounded by the schema', async (t) => {
  const deep = await env.request('POST', '/functions/in/none/execute', {
    rawBody: `{"input":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    headers: { 'content-type': 'application/json' },
  })
  t.equal(deep.status, 400, deep.text)
  t.match(deep.body, { code: 'request.too_deep' })
  const entry = await env.request('POST', '/api/v1/functions', {
    body: { namespace: 'in', name: 'f2', code: 'def handler(i, c):\n    return 1\n', entrypoint: 'h'.repeat(300_000) },
  })
  t.equal(entry.status, 422, entry.text)
  t.match(JSON.stringify(entry.body), /entrypoint/)
  const doc = await env.request('GET', '/api/v1/openapi.json', { token: null })
  t.match(doc.text, /"entrypoint":\{[^}]*"maxLength":128/, 'the bound is in the OpenAPI document')
})

t.test('a function result Postgres cannot store fails the execution with the place named', async (t) => {
  const fn = await env.request('POST', '/api/v1/functions', {
    body: {
      namespace: 'in',
      name: 'nul',
      code: 'def handler(input, context):\n    return {"a": {"b": "x\\u0000y"}}\n',
    },
  })
  t.equal(fn.status, 201, fn.text)
  const res = await env.request('POST', '/functions/in/nul/execute', { body: { input: {} } })
  t.equal(res.status, 200, res.text)
  const body = res.body as { status: string; error: unknown; execution_id: string }
  t.not(body.status, 'success', 'never answers success')
  t.match(JSON.stringify(body.error), /result\.unstorable: the result contains a NUL character at \$\.a\.b/)
  const row = await eventually(async () => {
    const r = await env.request('GET', `/executions/${body.execution_id}`)
    return (r.body as { status?: string }).status === 'failed' ? (r.body as { error: string }) : undefined
  }, 'the execution row to end failed')
  t.match(row.error, /result\.unstorable/)
})

/** A job state planted straight into JOB_STATE, as a worker of any kind could write it. */
function plantedState(over: Partial<JobState>): JobState {
  const now = new Date().toISOString()
  return {
    id: randomUUID(),
    pool: 'fn',
    kind: 'function',
    namespace: 'in',
    name: 'planted',
    status: 'completed',
    attempts: 1,
    user_id: env.adminId,
    trigger_type: 'api',
    trigger_id: 'test',
    chat_id: null,
    parent_id: null,
    depth: 0,
    input: {},
    worker: null,
    error: null,
    retry_of: null,
    callback_url: null,
    created_at: now,
    started_at: now,
    finished_at: now,
    ...over,
  }
}
const executionRow = async (id: string) =>
  (
    await env.sql<{ status: string; error: string | null; input_data: unknown }>(
      'select status, error, input_data from executions where id = $1',
      [id],
    )
  )[0]

t.test('the mirror records an unstorable result as failed and moves on to the next entry', async (t) => {
  const poison = plantedState({ result: { a: { b: 'x\u0000' } }, input: { 'k\u0000': 'v\ud800' } })
  await jobs.store.create(poison)
  const next = plantedState({ result: { fine: true } })
  await jobs.store.create(next)
  const row = await eventually(async () => await executionRow(poison.id), 'the poison execution row')
  t.equal(row.status, 'failed')
  t.equal(row.error, 'result.unstorable: the result contains a NUL character at $.a.b')
  t.same(row.input_data, { 'k\ufffd': 'v\ufffd' }, 'other text is stored with U+FFFD in its place')
  const after = await eventually(async () => await executionRow(next.id), 'the next execution row')
  t.equal(after.status, 'completed')
  // a large result lives in the JOB_RESULTS object store, not in the state: checked the same way
  const stored = plantedState({ result_stored: true })
  await jobs.results.put(stored.id, JSON.stringify({ rows: ['fine', { note: 'x\ud800' }] }))
  await jobs.store.create(stored)
  const big = await eventually(async () => await executionRow(stored.id), 'the stored-result execution row')
  t.equal(big.status, 'failed')
  t.equal(big.error, 'result.unstorable: the result contains a lone surrogate at $.rows[1].note')
})

t.test('an entry that keeps failing is recorded as failed after a few attempts, never retried forever', async (t) => {
  // a user id that is no uuid: the row's cast fails on every delivery, not a text problem
  const poison = plantedState({ user_id: 'not-a-uuid', status: 'running', finished_at: null })
  await jobs.store.create(poison)
  const row = await eventually(async () => await executionRow(poison.id), 'the poison execution row', 30_000)
  t.equal(row.status, 'failed')
  t.match(
    row.error,
    new RegExp(`^mirror\\.failed: this job state could not be recorded after ${String(MIRROR_MAX_ATTEMPTS)} attempts`),
  )
  const next = plantedState({ result: 1 })
  await jobs.store.create(next)
  t.equal((await eventually(async () => await executionRow(next.id), 'the next execution row')).status, 'completed')
})

t.test('LLM output with NUL or lone surrogates is stored with U+FFFD instead', async (t) => {
  const p = await env.request('POST', '/api/v1/llm-providers', {
    body: {
      name: 'fake',
      provider_type: 'openai',
      api_endpoint: llm.endpoint('openai'),
      api_key: 'sk-fake',
      default_model: 'fake-model',
      is_default: true,
    },
  })
  t.equal(p.status, 201, p.text)
  const a = await env.request('POST', '/api/v1/agents', {
    body: { namespace: 'in', name: 'talker', system_prompt: 'You talk.' },
  })
  t.equal(a.status, 201, a.text)
  const chat = (await env.request('POST', '/agents/in/talker/chats', { body: {} })).body as { id: string }
  llm.push({ text: ['bad\u0000', 'text\ud800!'] })
  const res = await env.request('POST', `/chats/${chat.id}/messages`, { body: { content: 'hi' } })
  t.equal(res.status, 200, res.text)
  const stored = await env.sql<{ content: string }>(
    "select content from chat_messages where chat_id = $1 and role = 'assistant'",
    [chat.id],
  )
  t.same(
    stored.map((r) => r.content),
    ['bad\ufffdtext\ufffd!'],
  )
  const turns = await eventually(async () => {
    const rows = await env.sql<{ status: string; error: string | null }>(
      'select status, error from executions where chat_id = $1',
      [chat.id],
    )
    return rows.length > 0 && rows.every((r) => r.status === 'completed' || r.status === 'failed') ? rows : undefined
  }, 'the turn execution rows')
  t.same(
    turns.map((r) => r.status),
    turns.map(() => 'completed'),
    `the turn's execution is not failed by the mirror: ${JSON.stringify(turns)}`,
  )
})
