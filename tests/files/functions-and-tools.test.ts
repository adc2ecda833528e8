import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'

/*
 * What runs code around files: the content filter (a function job in a sandbox before a version
 * is stored: approve, reject, modify), the post-upload function (an async job after it), and the
 * agent file tools (fake LLM) with the chat user's permission checked when a tool runs.
 */
let env: TestPlatform
let llm: FakeLlm
let a: { id: string; token: string }

const FILTER = `import base64
def handler(input, context):
    text = base64.b64decode(input["content_base64"]).decode("utf-8", "replace")
    if "forbidden" in text:
        return {"action": "reject", "reason": "contains a forbidden word"}
    if input["filename"].endswith(".up"):
        return {"action": "modify", "content": text.upper(), "file_metadata": {"filtered": True}}
    return {"action": "approve"}
`

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  env = await startTestPlatform(t, { FILES_SWEEP_SECONDS: '0.2' })
  a = await env.createUser('tools-a@test.local')
  const mk = (path: string, body: unknown, token = a.token) => env.create(path, body, token)
  await env.create('/api/v1/llm-providers', llm.provider())
  await mk('/api/v1/functions', { namespace: 'kb', name: 'filter', code: FILTER })
  await mk('/api/v1/functions', {
    namespace: 'kb',
    name: 'after',
    code: 'def handler(input, context):\n    return {"seen": input["filename"], "version": input["version"]}\n',
  })
  // a filtered collection takes at most FILES_CONTENT_FILTER_MAX_BYTES (256 KiB = 0.25 MiB) a file
  await mk('/api/v1/collections', {
    namespace: 'kb',
    name: 'docs',
    content_filter_function: 'kb/filter',
    post_upload_function: 'kb/after',
    max_file_size_mb: 0.25,
  })
  await mk('/api/v1/collections', { namespace: 'kb', name: 'notes' })
})

/** The body of the n-th request the fake LLM received. */
function sent(n: number): Record<string, unknown> {
  const r = llm.requests[n]
  if (r === undefined) throw new Error(`the LLM got no request #${String(n)}`)
  return r.body
}

const put = (coll: string, name: string, text: string, token = a.token) =>
  env.request('POST', `/files/kb/${coll}`, {
    token,
    body: { name, content_base64: Buffer.from(text).toString('base64'), content_type: 'text/plain' },
  })

t.test('content filter: approve, reject (nothing stored), modify (content and metadata)', async (t) => {
  const ok = await put('docs', 'boiler.txt', 'Reset the pressure valve.\n')
  t.equal(ok.status, 201, ok.text)
  const rejected = await put('docs', 'bad.txt', 'this is forbidden\n')
  t.equal(rejected.status, 422)
  t.match(rejected.body, { code: 'file.rejected', detail: /forbidden word/ })
  t.equal((await env.request('GET', '/files/kb/docs/bad.txt/info', { token: a.token })).status, 404)
  const modified = await put('docs', 'shout.up', 'quiet words\n')
  t.equal(modified.status, 201, modified.text)
  t.match(modified.body, { file_metadata: { filtered: true } })
  const got = await fetch(`${env.base}/files/kb/docs/shout.up`, { headers: { authorization: `Bearer ${a.token}` } })
  t.equal(await got.text(), 'QUIET WORDS\n')
  const big = await env.request('POST', '/files/kb/docs', {
    token: a.token,
    body: { name: 'big.txt', content_base64: Buffer.alloc(300 * 1024, 'a').toString('base64') },
  })
  t.equal(
    big.status,
    413,
    'over FILES_CONTENT_FILTER_MAX_BYTES (256 KiB): the filter cannot see it, so it is not stored',
  )
  t.match(big.body, { code: 'file.too_large' })
  // the rejected and the replaced objects do not stay in the object store
  await eventually(
    async () =>
      (await env.sql('select count(*)::int as n from file_blob_garbage'))[0]?.['n'] === 0 ? true : undefined,
    'refused objects swept',
  )
})

t.test(
  'a collection with a content filter cannot promise more than the filter can be given: 422 at save',
  async (t) => {
    const made = await env.request('POST', '/api/v1/collections', {
      token: a.token,
      body: { namespace: 'kb', name: 'filtered-big', content_filter_function: 'kb/filter' },
    })
    t.equal(made.status, 422, 'the default max_file_size_mb (100) is above the cap')
    t.match(made.body, {
      code: 'request.invalid',
      errors: [{ path: 'max_file_size_mb', message: /FILES_CONTENT_FILTER_MAX_BYTES \(262144 bytes\).*at most 0\.25/ }],
    })
    const raise = await env.request('PUT', '/api/v1/collections/kb/docs', {
      token: a.token,
      body: { max_file_size_mb: 1 },
    })
    t.equal(raise.status, 422, 'nor may a filtered collection be raised above it later')
    const plain = await env.request('POST', '/api/v1/collections', {
      token: a.token,
      body: { namespace: 'kb', name: 'plain-big', max_file_size_mb: 100 },
    })
    t.equal(plain.status, 201, "without a filter the limit is the collection's own")
    const adding = await env.request('PUT', '/api/v1/collections/kb/plain-big', {
      token: a.token,
      body: { content_filter_function: 'kb/filter' },
    })
    t.equal(adding.status, 422, 'adding a filter to a collection with a larger limit is refused too')
    const small = await env.request('PUT', '/api/v1/collections/kb/plain-big', {
      token: a.token,
      body: { content_filter_function: 'kb/filter', max_file_size_mb: 0.125 },
    })
    t.equal(small.status, 200, small.text)
    const over = await env.request('POST', '/files/kb/plain-big', {
      token: a.token,
      body: { name: 'x.txt', content_base64: Buffer.alloc(200 * 1024, 'a').toString('base64') },
    })
    t.equal(over.status, 413, 'a fractional limit holds: 200 KiB over 0.125 MiB')
  },
)

t.test('post_upload_function runs as an async job after the upload', async (t) => {
  await put('docs', 'late.txt', 'hello\n')
  const row = await eventually(async () => {
    const rows = await env.sql<{ status: string; trigger_type: string; output_data: unknown }>(
      "select status, trigger_type, output_data from executions where namespace = 'kb' and name = 'after' and input_data->>'filename' = 'late.txt'",
    )
    return rows[0]?.status === 'completed' ? rows[0] : undefined
  }, 'the post-upload execution')
  t.equal(row.trigger_type, 'collection')
  t.same(row.output_data, { seen: 'late.txt', version: 1 })
})

t.test('an agent answers with the file-search tool; read-only agents get no write tools', async (t) => {
  await put('notes', 'pump.txt', 'The pump needs oil every month.\nNothing else.\n')
  const mkAgent = async (name: string, enabled: unknown[]) => {
    const r = await env.request('POST', '/api/v1/agents', {
      token: a.token,
      body: { namespace: 'kb', name, system_prompt: 'You answer from the files.', enabled_collections: enabled },
    })
    if (r.status !== 201) throw new Error(r.text)
    return (
      (await env.request('POST', `/agents/kb/${name}/chats`, { token: a.token, body: {} })).body as { id: string }
    ).id
  }
  const chat = await mkAgent('reader', ['kb/notes'])
  llm.reset()
  llm.push(
    { tool_calls: [{ id: 's1', name: 'search_collection__kb__notes', arguments: { query: 'oil' } }] },
    { text: 'The pump needs oil every month (pump.txt, line 1).' },
  )
  const res = await env.request('POST', `/chats/${chat}/messages`, {
    token: a.token,
    body: { content: 'How often does the pump need oil?' },
  })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: /oil every month/ })
  const first = sent(0) as { tools: { function: { name: string } }[] }
  t.same(
    first.tools.map((x) => x.function.name).sort(),
    ['get_file__kb__notes', 'search_collection__kb__notes'],
    'read-only: search and read',
  )
  const second = sent(1) as { messages: { role: string; content: string }[] }
  const toolMsg = second.messages.find((m) => m.role === 'tool')
  t.same(JSON.parse(toolMsg?.content ?? 'null'), {
    results: [{ filename: 'pump.txt', version: 1, matches: [{ line: 1, text: 'The pump needs oil every month.' }] }],
  })

  const writer = await mkAgent('writer', [{ collection: 'kb/notes', access: 'readwrite' }])
  llm.reset()
  llm.push(
    {
      tool_calls: [
        { id: 'w1', name: 'write_file__kb__notes', arguments: { filename: 'todo.md', content: '- buy oil\n' } },
      ],
    },
    {
      tool_calls: [
        {
          id: 'e1',
          name: 'edit_file__kb__notes',
          arguments: { filename: 'todo.md', old_text: 'oil', new_text: 'more oil' },
        },
      ],
    },
    { tool_calls: [{ id: 'r1', name: 'get_file__kb__notes', arguments: { filename: 'todo.md' } }] },
    { text: 'Noted.' },
  )
  const w = await env.request('POST', `/chats/${writer}/messages`, {
    token: a.token,
    body: { content: 'Note: buy oil' },
  })
  t.equal(w.status, 200, w.text)
  t.same((sent(0) as { tools: { function: { name: string } }[] }).tools.map((x) => x.function.name).sort(), [
    'delete_file__kb__notes',
    'edit_file__kb__notes',
    'get_file__kb__notes',
    'search_collection__kb__notes',
    'write_file__kb__notes',
  ])
  const info = await env.request('GET', '/files/kb/notes/todo.md/info', { token: a.token })
  t.match(info.body, { current_version: 2, content_type: 'text/markdown' })
  const read = (sent(3) as { messages: { role: string; content: string }[] }).messages
    .filter((m) => m.role === 'tool')
    .at(-1)
  t.match(JSON.parse(read?.content ?? '{}'), { filename: 'todo.md', version: 2, content: '- buy more oil\n' })
})

t.test("the tools check the chat user's permission when they run", async (t) => {
  // B chats with an agent of B's that names A's collection: discovery finds nothing B may read,
  // and a call to the tool by name is refused at run time
  const b = await env.createUser('tools-b@test.local')
  const r = await env.request('POST', '/api/v1/agents', {
    token: b.token,
    body: {
      namespace: 'bspace',
      name: 'snoop',
      enabled_collections: [{ collection: 'kb/notes', access: 'readwrite' }],
    },
  })
  t.equal(r.status, 201, r.text)
  const chat = (
    (await env.request('POST', '/agents/bspace/snoop/chats', { token: b.token, body: {} })).body as { id: string }
  ).id
  llm.reset()
  llm.push(
    { tool_calls: [{ id: 'x1', name: 'get_file__kb__notes', arguments: { filename: 'pump.txt' } }] },
    { text: 'I could not read it.' },
  )
  const res = await env.request('POST', `/chats/${chat}/messages`, {
    token: b.token,
    body: { content: 'read pump.txt' },
  })
  t.equal(res.status, 200, res.text)
  const tools = (sent(0) as { tools?: unknown[] }).tools ?? []
  t.same(tools, [], 'no file tools offered for a collection B cannot read')
  const toolMsg = (sent(1) as { messages: { role: string; content: string }[] }).messages.find((m) => m.role === 'tool')
  t.notMatch(toolMsg?.content ?? '', /pump needs oil/, 'nothing of A leaks')
})

t.test('a readwrite entry never grants more than the chat user holds: the write is refused when it runs', async (t) => {
  const r = await env.request('POST', '/api/v1/agents', {
    token: a.token,
    body: {
      namespace: 'kb',
      name: 'shared-writer',
      enabled_collections: [{ collection: 'kb/notes', access: 'readwrite' }],
    },
  })
  t.equal(r.status, 201, r.text)
  const c = await env.createUser('tools-c@test.local')
  const grants = {
    'platform.agents/kb/shared-writer.read:all': true,
    'platform.agents/kb/shared-writer.chat:all': true,
    'platform.collections/kb/notes.read:all': true,
  }
  t.equal(
    (await env.request('POST', '/api/v1/roles', { body: { name: 'NotesReaders', permissions: grants } })).status,
    201,
  )
  t.equal((await env.request('POST', `/api/v1/roles/NotesReaders/users/${c.id}`)).status, 200)
  const chat = await env.request('POST', '/agents/kb/shared-writer/chats', { token: c.token, body: {} })
  t.equal(chat.status, 201, chat.text)
  llm.reset()
  llm.push(
    { tool_calls: [{ id: 'w9', name: 'write_file__kb__notes', arguments: { filename: 'planted.md', content: 'hi' } }] },
    { text: 'I could not write.' },
  )
  const res = await env.request('POST', `/chats/${(chat.body as { id: string }).id}/messages`, {
    token: c.token,
    body: { content: 'write a file' },
  })
  t.equal(res.status, 200, res.text)
  const offered = (sent(0) as { tools: { function: { name: string } }[] }).tools.map((x) => x.function.name)
  t.ok(offered.includes('write_file__kb__notes'), 'discovery follows the agent (readwrite)')
  const toolMsg = (sent(1) as { messages: { role: string; content: string }[] }).messages.find((m) => m.role === 'tool')
  t.match(
    JSON.parse(toolMsg?.content ?? '{}'),
    { error: /not allowed to upload files/ },
    'the run-time check refuses the read-only user',
  )
  t.equal(
    (await env.request('GET', '/files/kb/notes/planted.md/info', { token: a.token })).status,
    404,
    'nothing written',
  )
})
