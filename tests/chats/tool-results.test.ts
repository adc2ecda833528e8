import t from 'tap'
import { SWEPT_TOOL_RESULT, sweepToolResults } from '../../src/chats/tool-result-sweep.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * Tool results of real function tools, as the LLM receives them and as they are kept:
 * TOOL_RESULT_CONTEXT_MAX_SIZE trims a long list to whole elements with the marker (top-level, and
 * an object's list); TOOL_RESULT_MAX_INLINE keeps only the last results inline (older ones a short
 * reference); TOOL_RESULT_RETENTION_DAYS: results backdated past it are swept, newer ones stay.
 */
let env: TestPlatform
let llm: FakeLlm
const post = async (path: string, body: unknown) => env.request('POST', path, { body })
type Sent = { messages: { role: string; content: string | null; tool_call_id?: string }[] }
const toolMessages = (i: number) =>
  ((llm.requests[i]?.body ?? { messages: [] }) as unknown as Sent).messages.filter((m) => m.role === 'tool')
const newChat = async () => ((await post('/agents/demo/lister/chats', {})).body as { id: string }).id

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t, { TOOL_RESULT_CONTEXT_MAX_SIZE: '2000', TOOL_RESULT_MAX_INLINE: '2' })
  const mk = async (path: string, body: unknown) => {
    const r = await post(path, body)
    if (r.status !== 201) throw new Error(`${path}: ${r.text}`)
  }
  await mk('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  await mk('/api/v1/functions', {
    namespace: 'tools',
    name: 'rows',
    description: 'all rows',
    code: 'def handler(input, context):\n    return [{"id": i, "name": "row number %d" % i} for i in range(500)]\n',
  })
  await mk('/api/v1/functions', {
    namespace: 'tools',
    name: 'table',
    description: 'a table',
    code: 'def handler(input, context):\n    return {"query": "all", "count": 500, "rows": [{"id": i, "name": "row number %d" % i} for i in range(500)]}\n',
  })
  await mk('/api/v1/functions', {
    namespace: 'tools',
    name: 'echo',
    description: 'echoes',
    code: 'def handler(input, context):\n    return {"echo": input.get("n")}\n',
  })
  await mk('/api/v1/agents', {
    namespace: 'demo',
    name: 'lister',
    enabled_functions: ['tools/rows', 'tools/table', 'tools/echo'],
  })
})

const rows = Array.from({ length: 500 }, (_, i) => ({ id: i, name: `row number ${String(i)}` }))

t.test('a function returning a long list: the LLM gets whole elements and the marker', async (t) => {
  const chat = await newChat()
  const from = llm.requests.length
  llm.push({ tool_calls: [{ id: 'l1', name: 'tools__rows', arguments: {} }] }, { text: 'got them' })
  const res = await post(`/chats/${chat}/messages`, { content: 'list everything' })
  t.equal(res.status, 200, res.text)
  const [result] = toolMessages(from + 1)
  const content = result?.content ?? ''
  t.ok(content.length <= 2000, `within TOOL_RESULT_CONTEXT_MAX_SIZE (${String(content.length)})`)
  const list = JSON.parse(content) as unknown[]
  const marker = list.at(-1) as { returned: number }
  t.match(marker, { _truncated: true, total: 500 })
  t.equal(list.length - 1, marker.returned)
  t.same(list.slice(0, -1), rows.slice(0, marker.returned), 'whole elements, not clipped text')
  const stored = (
    (await env.request('GET', `/chats/${chat}`)).body as { messages: { role: string; content: string }[] }
  ).messages.find((m) => m.role === 'tool')
  t.equal(
    (JSON.parse(stored?.content ?? '[]') as unknown[]).length,
    500,
    'the stored result is whole (within TOOL_RESULT_MAX_SIZE)',
  )
})

t.test('an object whose large part is a list: that list is trimmed, the rest kept', async (t) => {
  const from = llm.requests.length
  llm.push({ tool_calls: [{ id: 'o1', name: 'tools__table', arguments: {} }] }, { text: 'got the table' })
  const res = await post(`/chats/${await newChat()}/messages`, { content: 'the table' })
  t.equal(res.status, 200, res.text)
  const v = JSON.parse(toolMessages(from + 1)[0]?.content ?? '{}') as { query: string; count: number; rows: unknown[] }
  t.match(v, { query: 'all', count: 500 })
  const marker = v.rows.at(-1) as { returned: number }
  t.match(marker, { _truncated: true, total: 500 })
  t.same(v.rows.slice(0, -1), rows.slice(0, marker.returned))
})

let inlineChat = ''
t.test('TOOL_RESULT_MAX_INLINE: only the last results stay inline, older ones are references', async (t) => {
  inlineChat = await newChat()
  const from = llm.requests.length
  llm.push(
    ...['e1', 'e2', 'e3', 'e4'].map((id, n) => ({ tool_calls: [{ id, name: 'tools__echo', arguments: { n } }] })),
    { text: 'done' },
  )
  const res = await post(`/chats/${inlineChat}/messages`, { content: 'echo four times' })
  t.equal(res.status, 200, res.text)
  t.equal(llm.requests.length - from, 5)
  const last = toolMessages(from + 4)
  t.same(
    last.map((m) => m.tool_call_id),
    ['e1', 'e2', 'e3', 'e4'],
    'every call keeps its answer',
  )
  t.match(JSON.parse(last[0]?.content ?? ''), { _omitted: true, tool_call_id: 'e1' })
  t.match(JSON.parse(last[1]?.content ?? ''), { _omitted: true, tool_call_id: 'e2' })
  t.same(JSON.parse(last[2]?.content ?? ''), { echo: 2 })
  t.same(JSON.parse(last[3]?.content ?? ''), { echo: 3 })
  const stored = (
    (await env.request('GET', `/chats/${inlineChat}`)).body as { messages: { role: string; content: string }[] }
  ).messages.filter((m) => m.role === 'tool')
  t.same(
    stored.map((m) => JSON.parse(m.content) as unknown),
    [{ echo: 0 }, { echo: 1 }, { echo: 2 }, { echo: 3 }],
    'the chat keeps them all',
  )
})

t.test('TOOL_RESULT_RETENTION_DAYS: results older than it are swept, newer ones stay', async (t) => {
  const db = env.platform.db
  if (db === undefined) throw new Error('the test platform has no database')
  const days = env.config.TOOL_RESULT_RETENTION_DAYS
  t.equal(days, 30, 'the default')
  await env.sql(
    `update chat_messages set created_at = now() - make_interval(days => $1) where role = 'tool' and tool_call_id in ('e1', 'e2')`,
    [days + 1],
  )
  await env.sql(
    `update chat_messages set created_at = now() - make_interval(days => $1) where role = 'tool' and tool_call_id = 'e3'`,
    [days - 1],
  )
  t.equal(await sweepToolResults(db, days), 2, 'two swept')
  const byCall = async () =>
    Object.fromEntries(
      (
        await env.sql<{ tool_call_id: string; content: string }>(
          `select tool_call_id, content from chat_messages where chat_id = $1 and role = 'tool'`,
          [inlineChat],
        )
      ).map((r) => [r.tool_call_id, JSON.parse(r.content) as unknown]),
    )
  const swept = JSON.parse(SWEPT_TOOL_RESULT) as unknown
  t.same(
    await byCall(),
    { e1: swept, e2: swept, e3: { echo: 2 }, e4: { echo: 3 } },
    'the old results are gone, the newer ones kept',
  )
  t.equal(await sweepToolResults(db, days), 0, 'a second sweep finds nothing')
  // the chat still reads and the model still gets an answer for every call
  const from = llm.requests.length
  llm.push({ text: 'ok' })
  const res = await post(`/chats/${inlineChat}/messages`, { content: 'and now?' })
  t.equal(res.status, 200, res.text)
  t.same(
    toolMessages(from).map((m) => m.tool_call_id),
    ['e1', 'e2', 'e3', 'e4'],
  )
})
