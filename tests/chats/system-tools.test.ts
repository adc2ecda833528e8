import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm, type FakeLlm, type FakeReply } from '../helpers/fake-llm.ts'

/*
 * An agent's system_tools through a chat with the scripted LLM calling them: unknown names and
 * wrong options refused on save (422 naming the entry); current_time in the entry's time zone;
 * search_files over the agent's collections; render_template within the option's templates, as the
 * chat's user (a template the user may not read is refused when the call runs); schedule_message
 * sending a follow-up into the chat after its delay (a delayed job), refused when due once the
 * agent no longer offers it, and its delay bounded by max_delay_seconds.
 */
let env: TestPlatform
let llm: FakeLlm
let user: { id: string; token: string }

type Message = { role: string; content: string | null; tool_call_id: string | null }

const ok = async (method: string, path: string, body: unknown, token?: string) => {
  const r = await env.request(method, path, { body, ...(token === undefined ? {} : { token }) })
  if (r.status >= 300) throw new Error(`${method} ${path}: ${String(r.status)} ${r.text}`)
  return r.body as Record<string, unknown>
}

/** One message in a new chat of user A with a/assistant; the chat's id and the tool results by call id. */
async function turn(
  replies: FakeReply[],
  content = 'go',
): Promise<{ chatId: string; reply: string; results: Record<string, Record<string, unknown>> }> {
  llm.push(...replies)
  const chat = await ok('POST', '/agents/a/assistant/chats', {}, user.token)
  const res = await ok('POST', `/chats/${String(chat['id'])}/messages`, { content }, user.token)
  const full = await ok('GET', `/chats/${String(chat['id'])}`, undefined, user.token)
  const msgs = full['messages'] as Message[]
  const results = Object.fromEntries(
    msgs
      .filter((m) => m.role === 'tool')
      .map((m) => [m.tool_call_id, JSON.parse(m.content ?? 'null') as Record<string, unknown>]),
  )
  return { chatId: String(chat['id']), reply: String(res['content']), results }
}

const call = (id: string, name: string, args: Record<string, unknown>): FakeReply => ({
  tool_calls: [{ id, name, arguments: args }],
})

t.before(async () => {
  llm = await startFakeLlm({ defaultReply: { text: 'noted' } })
  t.teardown(() => llm.close())
  env = await startTestPlatform(t)
  await ok('POST', '/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'sk-fake',
    default_model: 'fake-model',
    is_default: true,
  })
  user = await env.createUser('tools-a@test.local')
  // A's own collection with one text file, and A's own template
  await ok('POST', '/api/v1/collections', { namespace: 'a', name: 'docs' }, user.token)
  await ok(
    'POST',
    '/files/a/docs',
    {
      name: 'boiler.txt',
      content_base64: Buffer.from('Boiler B-200: close the valve before refilling.\n').toString('base64'),
      content_type: 'text/plain',
    },
    user.token,
  )
  await ok(
    'POST',
    '/api/v1/templates',
    {
      namespace: 'a',
      name: 'welcome',
      title: 'Hi {{ name }}',
      html_content: '<p>Hello {{ name }}</p>',
      text_content: 'Hello {{ name }}',
    },
    user.token,
  )
  // the admin's template and collection, which A may not read
  await ok('POST', '/api/v1/templates', {
    namespace: 'adm',
    name: 'secret',
    html_content: '<p>internal {{ name }}</p>',
  })
  await ok('POST', '/api/v1/collections', { namespace: 'adm', name: 'private' })
  await ok('POST', '/files/adm/private', {
    name: 'plant.txt',
    content_base64: Buffer.from('Internal: the valve code is 1234.\n').toString('base64'),
    content_type: 'text/plain',
  })
  // an agent of A whose search_files names the admin's collection too
  await ok(
    'POST',
    '/api/v1/agents',
    {
      namespace: 'a',
      name: 'wide',
      system_prompt: 'You search.',
      system_tools: [{ name: 'search_files', collections: ['a/docs', 'adm/private'], max_results: 5 }],
    },
    user.token,
  )
  await ok(
    'POST',
    '/api/v1/agents',
    {
      namespace: 'a',
      name: 'assistant',
      system_prompt: 'You help.',
      enabled_collections: ['a/docs'],
      system_tools: [
        { name: 'current_time', timezone: 'Asia/Tokyo' },
        'search_files',
        { name: 'render_template', templates: ['a/welcome', 'adm/secret'] },
        { name: 'schedule_message', max_delay_seconds: 60 },
      ],
    },
    user.token,
  )
})

t.test('unknown system tools and wrong options are refused on save, naming the entry', async (t) => {
  const save = (system_tools: unknown[]) =>
    env.request('POST', '/api/v1/agents', { token: user.token, body: { namespace: 'a', name: 'bad', system_tools } })
  const unknown = await save(['current_time', 'web_search'])
  t.equal(unknown.status, 422, unknown.text)
  t.match(unknown.body, {
    errors: [
      {
        path: 'system_tools.1',
        message:
          /unknown system tool "web_search"; known: current_time, search_files, render_template, schedule_message/,
      },
    ],
  })
  t.match((await save([{ name: 'current_time', timezone: 'Mars/Olympus' }])).body, {
    errors: [{ path: 'system_tools.0.timezone', message: /unknown time zone/ }],
  })
  t.match(
    (await save([{ name: 'render_template' }])).body,
    { errors: [{ path: /^system_tools\.0/, message: /render_template/ }] },
    'render_template needs its templates',
  )
  t.match((await save([{ name: 'schedule_message', max_delay_seconds: 0 }])).body, {
    errors: [{ path: 'system_tools.0.max_delay_seconds' }],
  })
  t.match(
    (await save([{ name: 'current_time', colour: 'red' }])).body,
    { errors: [{ path: /^system_tools\.0/ }] },
    'an option the tool does not take',
  )
  t.match((await save(['current_time', { name: 'current_time' }])).body, {
    errors: [{ path: 'system_tools.1', message: /listed twice/ }],
  })
  t.equal((await env.request('GET', '/api/v1/agents/a/bad', { token: user.token })).status, 404, 'nothing was saved')
})

t.test('the tools are offered to the model with their options', async (t) => {
  const before = llm.requests.length
  await turn([{ text: 'hi' }])
  const sent = llm.requests[before]?.body as {
    tools: { function: { name: string; parameters: { properties: Record<string, { enum?: string[] }> } } }[]
  }
  const byName = Object.fromEntries(sent.tools.map((x) => [x.function.name, x.function]))
  t.same(Object.keys(byName).sort(), [
    'current_time',
    'get_file__a__docs',
    'render_template',
    'schedule_message',
    'search_collection__a__docs',
    'search_files',
  ])
  t.same(
    byName['render_template']?.parameters.properties['template']?.enum,
    ['a/welcome'],
    'only the templates the user may read are offered',
  )
  t.same(
    byName['search_files']?.parameters.properties['collection']?.enum,
    ['a/docs'],
    "search_files defaults to the agent's enabled_collections",
  )
})

t.test('current_time answers in the configured time zone, or the one asked for', async (t) => {
  const { results } = await turn([
    {
      tool_calls: [
        { id: 't1', name: 'current_time', arguments: {} },
        { id: 't2', name: 'current_time', arguments: { timezone: 'America/New_York' } },
        { id: 't3', name: 'current_time', arguments: { timezone: 'Nowhere/Else' } },
      ],
    },
    { text: 'it is late' },
  ])
  t.match(results['t1'], {
    timezone: 'Asia/Tokyo',
    utc_offset: '+09:00',
    now: /Z$/,
    local: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/,
  })
  const now = new Date(String(results['t1']?.['now']))
  const tokyo = new Date(now.getTime() + 9 * 3600_000).toISOString().slice(0, 19)
  t.equal(results['t1']?.['local'], tokyo, "Tokyo's wall clock")
  t.match(results['t2'], { timezone: 'America/New_York', utc_offset: /^-0[45]:00$/ })
  t.match(results['t3'], { error: /unknown time zone/ })
})

t.test('search_files searches the collections as the chat user', async (t) => {
  const { results, reply } = await turn([call('s1', 'search_files', { query: 'valve' }), { text: 'close the valve' }])
  t.equal(reply, 'close the valve')
  t.match(results['s1'], {
    results: [{ collection: 'a/docs', filename: 'boiler.txt', matches: [{ line: 1, text: /close the valve/ }] }],
  })
  const other = await turn([call('s2', 'search_files', { query: 'x', collection: 'adm/private' }), { text: 'no' }])
  t.match(other.results['s2'], { error: /not searched by this tool/ })

  // the option names a collection A may not read: it is neither offered nor searched
  const before = llm.requests.length
  llm.push(call('s3', 'search_files', { query: 'valve' }), { text: 'searched' })
  const chat = await ok('POST', '/agents/a/wide/chats', {}, user.token)
  await ok('POST', `/chats/${String(chat['id'])}/messages`, { content: 'search' }, user.token)
  const offered = llm.requests[before]?.body as {
    tools: { function: { name: string; parameters: { properties: Record<string, { enum?: string[] }> } } }[]
  }
  t.same(
    offered.tools.find((x) => x.function.name === 'search_files')?.function.parameters.properties['collection']?.enum,
    ['a/docs'],
  )
  const msgs = (await ok('GET', `/chats/${String(chat['id'])}`, undefined, user.token))['messages'] as Message[]
  const found = JSON.parse(msgs.find((m) => m.tool_call_id === 's3')?.content ?? 'null') as {
    results: { collection: string }[]
  }
  t.same(
    found.results.map((r) => r.collection),
    ['a/docs'],
    "the admin's file is not among the hits",
  )
  t.notOk(JSON.stringify(found).includes('1234'))
})

t.test(
  'render_template renders an allowed template; one the user may not read is refused when the call runs',
  async (t) => {
    const { results } = await turn([
      {
        tool_calls: [
          { id: 'r1', name: 'render_template', arguments: { template: 'a/welcome', variables: { name: '<Ann>' } } },
          { id: 'r2', name: 'render_template', arguments: { template: 'adm/secret', variables: { name: 'x' } } },
          { id: 'r3', name: 'render_template', arguments: { template: 'a/other' } },
        ],
      },
      { text: 'rendered' },
    ])
    t.same(results['r1'], {
      template: 'a/welcome',
      title: 'Hi <Ann>',
      html_content: '<p>Hello &lt;Ann&gt;</p>',
      text_content: 'Hello <Ann>',
    })
    t.match(
      results['r2'],
      { error: /not found/, code: 'resource.not_found' },
      "the admin's template: A's read permission is checked at execution",
    )
    t.notOk(JSON.stringify(results['r2']).includes('internal'), 'nothing of it is shown')
    t.match(results['r3'], { error: /not one this agent may render/ })
  },
)

t.test('schedule_message sends a follow-up into the chat after its delay', async (t) => {
  const { chatId, results } = await turn([
    call('f1', 'schedule_message', { message: 'Check the boiler again.', delay_seconds: 1 }),
    call('f2', 'schedule_message', { message: 'too late', delay_seconds: 61 }),
    { text: 'I will check back.' },
  ])
  t.match(results['f1'], { scheduled: true, execution_id: /^[0-9a-f-]{36}$/, due_at: /Z$/ })
  t.match(results['f2'], { error: 'delay_seconds must be an integer from 1 to 60' }, 'bounded by max_delay_seconds')
  const executionId = String(results['f1']?.['execution_id'])
  const msgs = await eventually(async () => {
    const m = (await ok('GET', `/chats/${chatId}`, undefined, user.token))['messages'] as Message[]
    return m.at(-1)?.role === 'assistant' && m.some((x) => x.role === 'user' && x.content === 'Check the boiler again.')
      ? m
      : undefined
  }, 'the follow-up and its answer in the chat')
  t.same(
    msgs.filter((m) => m.role === 'user').map((m) => m.content),
    ['go', 'Check the boiler again.'],
    'sent as the next user message',
  )
  t.equal(msgs.at(-1)?.content, 'noted', 'and answered by the agent')
  const execution = await eventually(async () => {
    const r = await env.request('GET', `/executions/${executionId}`, { token: user.token })
    return r.status === 200 && (r.body as { status: string }).status === 'completed'
      ? (r.body as Record<string, unknown>)
      : undefined
  }, 'the follow-up execution completed')
  t.match(execution, { status: 'completed', trigger_type: 'agent' }, "an execution of the chat's user")
})

t.test('a follow-up is refused when it is due if the user may no longer chat with the agent', async (t) => {
  const { chatId, results } = await turn([
    call('h1', 'schedule_message', { message: 'are you there?', delay_seconds: 2 }),
    { text: 'later' },
  ])
  const executionId = String(results['h1']?.['execution_id'])
  // A loses every role (so the chat permission on its own agent) before the follow-up is due
  await env.sql('delete from user_roles where user_id = $1', [user.id])
  t.teardown(() =>
    env.sql("insert into user_roles (user_id, role_id) select $1, id from roles where name = 'Users'", [user.id]),
  )
  const execution = await eventually(async () => {
    const r = await env.request('GET', `/executions/${executionId}`)
    return r.status === 200 && (r.body as { status: string }).status === 'failed'
      ? (r.body as { error: string })
      : undefined
  }, 'the follow-up execution failed')
  t.match(execution.error, /not permitted to chat with a\/assistant/)
  const msgs = (await ok('GET', `/chats/${chatId}`, undefined))['messages'] as Message[]
  t.notOk(
    msgs.some((m) => m.content === 'are you there?'),
    'nothing was sent',
  )
})

t.test('a follow-up is refused when it is due if the agent no longer offers schedule_message', async (t) => {
  const { chatId, results } = await turn([
    call('g1', 'schedule_message', { message: 'ping', delay_seconds: 2 }),
    { text: 'later' },
  ])
  const executionId = String(results['g1']?.['execution_id'])
  await ok('PUT', '/api/v1/agents/a/assistant', { system_tools: ['current_time'] }, user.token)
  const execution = await eventually(async () => {
    const r = await env.request('GET', `/executions/${executionId}`, { token: user.token })
    return r.status === 200 && (r.body as { status: string }).status === 'failed'
      ? (r.body as { error: string })
      : undefined
  }, 'the follow-up execution failed')
  t.match(execution.error, /no longer offers schedule_message/)
  const msgs = (await ok('GET', `/chats/${chatId}`, undefined, user.token))['messages'] as Message[]
  t.notOk(
    msgs.some((m) => m.content === 'ping'),
    'nothing was sent',
  )
})
