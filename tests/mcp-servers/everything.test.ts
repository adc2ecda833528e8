import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t from 'tap'
import { freePort } from '../../src/platform/local-services.ts'
import { terminate } from '../helpers/child.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'
import { requireLocalTls } from '../helpers/local-https.ts'

/*
 * A remote MCP server nobody here wrote: the reference `@modelcontextprotocol/server-everything`
 * (devDependency) in its Streamable HTTP mode, as its own process. It listens on every interface;
 * the platform reaches it on a documentation address added to `lo` (the guard refuses loopback)
 * over plain HTTP, which the admin allows for that host with CONNECTOR_HTTP_HOSTS. An agent
 * enables it; the fake LLM is offered its tools (the platform's tools/list of it, through the
 * agent) and calls `get-sum` and `echo`; the results reach the LLM's next request and the chat.
 */
const ADDRESS = '198.51.100.37'
// the address on lo (the server speaks plain HTTP: the certificate goes unused)
requireLocalTls(t, ADDRESS, ['everything.test'])

const port = await freePort()
const server = spawn(
  process.execPath,
  [
    join(import.meta.dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js'),
    'streamableHttp',
  ],
  { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] },
)
t.teardown(() => terminate(server))
// it says so on stderr once it listens (dist/transports/streamableHttp.js)
await new Promise<void>((resolve, reject) => {
  server.once('exit', (code) => reject(new Error(`server-everything exited (${String(code)}) before listening`)))
  createInterface({ input: server.stderr }).on('line', (line) => {
    if (line.includes('listening on port')) resolve()
  })
})

const llm = await startFakeLlm()
t.teardown(() => llm.close())
const env = await startTestPlatform(t, { CONNECTOR_HTTP_HOSTS: ADDRESS })

type Sent = {
  messages: { role: string; content: unknown; tool_call_id?: string }[]
  tools?: { function: { name: string; description: string; parameters: Record<string, unknown> } }[]
}
type Message = { role: string; content: string; tool_call_id: string }

t.before(async () => {
  const mk = (path: string, body: unknown) => env.create(path, body)
  await env.create('/api/v1/llm-providers', llm.provider())
  await mk('/api/v1/mcp-servers', {
    namespace: 'ev',
    name: 'everything',
    description: 'the reference server',
    url: `http://${ADDRESS}:${String(port)}/mcp`,
    timeout_seconds: 10,
  })
  await mk('/api/v1/agents', {
    namespace: 'ev',
    name: 'all',
    system_prompt: 'You use every tool.',
    enabled_mcp_servers: [{ server: 'ev/everything' }],
  })
  await mk('/api/v1/agents', {
    namespace: 'ev',
    name: 'picked',
    system_prompt: 'You add and echo.',
    enabled_mcp_servers: [{ server: 'ev/everything', tools: ['get-sum', 'echo'] }],
  })
})

async function turn(agent: string, replies: Parameters<typeof llm.push>, content: string) {
  const chat = await env.request('POST', `/agents/ev/${agent}/chats`, { body: {} })
  if (chat.status !== 201) throw new Error(chat.text)
  const id = (chat.body as { id: string }).id
  const from = llm.requests.length
  llm.push(...replies)
  const res = await env.request('POST', `/chats/${id}/messages`, { body: { content } })
  const full = (await env.request('GET', `/chats/${id}`)).body as { messages: Message[] }
  return { res, messages: full.messages, sent: llm.requests.slice(from).map((r) => r.body as Sent) }
}

const toolMessage = (messages: Message[], id: string): unknown =>
  JSON.parse(messages.find((m) => m.role === 'tool' && m.tool_call_id === id)?.content ?? 'null') as unknown

t.test("the platform lists the server's tools: every one offered to the LLM with its schema", async (t) => {
  const { res, sent } = await turn('all', [{ text: 'I see the tools.' }], 'what can you do?')
  t.equal(res.status, 200, res.text)
  const tools = sent[0]?.tools ?? []
  const names = tools.map((x) => x.function.name)
  t.ok(names.length >= 10, `the reference server's tools (${String(names.length)}): ${names.join(', ')}`)
  for (const name of ['echo', 'get-sum', 'get-tiny-image', 'trigger-long-running-operation'])
    t.ok(names.includes(`mcp__ev__everything__${name}`), `offers ${name}`)
  const sum = tools.find((x) => x.function.name === 'mcp__ev__everything__get-sum')
  t.match(sum?.function, {
    description: /Returns the sum of two numbers \(MCP server ev\/everything: the reference server\)/,
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  })
})

t.test("the LLM calls get-sum and echo: the results reach the LLM's next request and the chat", async (t) => {
  const { res, messages, sent } = await turn(
    'picked',
    [
      {
        tool_calls: [
          { id: 's1', name: 'mcp__ev__everything__get-sum', arguments: { a: 19, b: 23 } },
          { id: 'e1', name: 'mcp__ev__everything__echo', arguments: { message: 'through the platform' } },
        ],
      },
      { text: 'The sum is 42.' },
    ],
    'add 19 and 23, and echo something',
  )
  t.equal(res.status, 200, res.text)
  t.match(res.body, { content: 'The sum is 42.' })
  t.same(
    sent[0]?.tools?.map((x) => x.function.name).sort(),
    ['mcp__ev__everything__echo', 'mcp__ev__everything__get-sum'],
    'the picked tools only',
  )
  t.same(toolMessage(messages, 's1'), { result: 'The sum of 19 and 23 is 42.' })
  t.same(toolMessage(messages, 'e1'), { result: 'Echo: through the platform' })
  const next = JSON.stringify(sent[1]?.messages)
  t.match(next, /The sum of 19 and 23 is 42\./, "the sum is in the LLM's next request")
  t.match(next, /Echo: through the platform/)
  t.equal(messages.at(-1)?.content, 'The sum is 42.', "the chat ends with the model's answer")
})

t.test("arguments the server's schema refuses come back as the tool's error, the turn goes on", async (t) => {
  const { res, messages } = await turn(
    'picked',
    [
      { tool_calls: [{ id: 'b1', name: 'mcp__ev__everything__get-sum', arguments: { a: 'one' } }] },
      { text: 'That did not work.' },
    ],
    'add one',
  )
  t.equal(res.status, 200, res.text)
  t.match(toolMessage(messages, 'b1'), { error: /./ })
})
