import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Delegation through the sub-agent pool cannot deadlock: with ONE sub-agent slot in the whole
 * platform, a chain agent → a → b → c completes although every sub-agent turn waits for the next
 * (a waiting parent lends its slot). A chain deeper than AGENT_MAX_DELEGATION_DEPTH is refused.
 */
t.test('a chain deeper than the sub-agent slots completes; the depth limit applies', async (t) => {
  const llm = await startFakeLlm()
  t.teardown(() => llm.close())
  const env = await startTestPlatform(t, {
    QUEUE_AGENT_SUB_REPLICAS: '1',
    QUEUE_AGENT_SUB_CONCURRENCY: '1',
    QUEUE_AGENT_REPLICAS: '1',
    QUEUE_AGENT_CONCURRENCY: '1',
    AGENT_MAX_DELEGATION_DEPTH: '3',
    MAX_EXECUTION_DEPTH: '10',
  })
  const post = (path: string, body: unknown) => env.request('POST', path, { body })
  await post('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'k',
    default_model: 'm',
    is_default: true,
  })
  for (const [name, next] of [
    ['top', 'a'],
    ['a', 'b'],
    ['b', 'c'],
    ['c', 'd'],
    ['d', null],
  ] as const) {
    const r = await post('/api/v1/agents', {
      namespace: 'chain',
      name,
      system_prompt: `You are ${name}.`,
      enabled_agents: next === null ? [] : [`chain/${next}`],
    })
    t.equal(r.status, 201, r.text)
  }
  const call = (who: string) => ({
    tool_calls: [{ id: `to-${who}`, name: `call_agent__chain__${who}`, arguments: { message: `ask ${who}` } }],
  })
  // top -> a -> b -> c; c answers; each parent then answers with what it got
  llm.push(
    call('a'),
    call('b'),
    call('c'),
    { text: 'c says hi' },
    { text: 'b relays' },
    { text: 'a relays' },
    { text: 'top is done' },
  )
  const chat = (await post('/agents/chain/top/chats', {})).body as { id: string }
  const res = await post(`/chats/${chat.id}/messages`, { content: 'go' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'top is done' }, 'the whole chain answered with one sub-agent slot')

  // depth: top(0) -> a(1) -> b(2) -> c(3) -> d(4) is deeper than 3
  llm.push(
    call('a'),
    call('b'),
    call('c'),
    call('d'),
    { text: 'c could not delegate' },
    { text: 'b relays' },
    { text: 'a relays' },
    { text: 'top done' },
  )
  const chat2 = (await post('/agents/chain/top/chats', {})).body as { id: string }
  const res2 = await post(`/chats/${chat2.id}/messages`, { content: 'go deeper' })
  t.equal(res2.status, 200, res2.text)
  const cTurn = llm.requests.find(
    (r) =>
      JSON.stringify(r.body).includes('You are c.') && JSON.stringify(r.body).includes('AGENT_MAX_DELEGATION_DEPTH'),
  )
  t.ok(cTurn !== undefined, "c's delegation to d was refused with the depth error as its tool result")
})

t.test('suspend mode: the parent turn ends while sub-agents work and resumes when both answered', async (t) => {
  const llm = await startFakeLlm()
  t.teardown(() => llm.close())
  // one agent slot: the parent must give it up for the resumed turn to run at all
  const env = await startTestPlatform(t, {
    AGENT_DELEGATE_MODE: 'suspend',
    QUEUE_AGENT_REPLICAS: '1',
    QUEUE_AGENT_CONCURRENCY: '1',
    QUEUE_AGENT_SUB_REPLICAS: '1',
    QUEUE_AGENT_SUB_CONCURRENCY: '1',
  })
  const post = (path: string, body: unknown) => env.request('POST', path, { body })
  await post('/api/v1/llm-providers', {
    name: 'fake',
    provider_type: 'openai',
    api_endpoint: llm.endpoint('openai'),
    api_key: 'k',
    default_model: 'm',
    is_default: true,
  })
  await post('/api/v1/agents', {
    namespace: 'sus',
    name: 'lead',
    system_prompt: 'You lead.',
    enabled_agents: ['sus/x', 'sus/y'],
  })
  await post('/api/v1/agents', { namespace: 'sus', name: 'x', system_prompt: 'You are x.' })
  await post('/api/v1/agents', { namespace: 'sus', name: 'y', system_prompt: 'You are y.' })
  llm.push(
    {
      tool_calls: [
        { id: 'tx', name: 'call_agent__sus__x', arguments: { message: 'x?' } },
        { id: 'ty', name: 'call_agent__sus__y', arguments: { message: 'y?' } },
      ],
    },
    { text: 'x answers', delay_ms: 50 },
    { text: 'y answers', delay_ms: 50 },
    { text: 'both answered' },
  )
  const chat = (await post('/agents/sus/lead/chats', {})).body as { id: string }
  const res = await post(`/chats/${chat.id}/messages`, { content: 'ask both' })
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'both answered', status: 'completed' })
  const msgs = (
    (await env.request('GET', `/chats/${chat.id}`)).body as {
      messages: { role: string; tool_call_id: string; content: string }[]
    }
  ).messages
  const results = Object.fromEntries(
    msgs.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, JSON.parse(m.content) as { reply: string }]),
  )
  t.same(Object.keys(results).sort(), ['tx', 'ty'], 'each sub-agent reply stored once')
  const last = llm.requests.at(-1)?.body as { messages: { role: string }[] }
  t.equal(last.messages.filter((m) => m.role === 'tool').length, 2, 'the resumed turn saw both replies')
  // the list reads the executions mirror, which a turn's reply may reach first (MIRROR_LINGER_MS)
  const agentJobs = async () =>
    ((await env.request('GET', '/api/v1/queue/jobs?status=completed')).body as { kind: string; pool: string }[]).filter(
      (j) => j.pool === 'agent',
    ).length
  const ran = await eventually(
    async () => {
      const n = await agentJobs()
      return n >= 2 ? n : undefined
    },
    'the completed agent jobs mirrored',
    10_000,
    100,
  ).catch(() => 0)
  t.ok(ran >= 2, 'the parent ran as more than one job (suspended, then resumed)')
})
