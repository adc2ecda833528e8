import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'
import { cliHome, type CliHome } from './cli.ts'

// Every step runs the `platform` binary as its own process (TypeScript loaded each time, 1-3 s of
// CPU on a 2-core machine): in a loaded suite this file outlasts the 180 s a file gets by default.
t.setTimeout(420_000)

/*
 * `run`, `chat` and `events tail` as child processes against one platform: a function's result and
 * exit codes; a chat whose answer streams token by token with its tool calls shown; the execution
 * events of a run seen live, and only by those who may see them (the route's per-event check).
 */
let env: TestPlatform
let llm: FakeLlm
let admin: CliHome

t.before(async () => {
  llm = await startFakeLlm()
  t.teardown(() => llm.close())
  // a dropped stream's turn is cancelled after this window (Ctrl-C in chat)
  env = await startTestPlatform(t, { SSE_RECONNECT_WINDOW_SECONDS: '1' })
  const made = await Promise.all([
    env.request('POST', '/api/v1/llm-providers', {
      body: {
        name: 'fake',
        provider_type: 'openai',
        api_endpoint: llm.endpoint('openai'),
        api_key: 'k',
        default_model: 'm',
        is_default: true,
      },
    }),
    env.request('POST', '/api/v1/functions', {
      body: {
        namespace: 'cli',
        name: 'double',
        code: 'def handler(input, context):\n    print("doubling")\n    if input.get("fail"):\n        raise ValueError("asked to fail")\n    return {"y": input["x"] * 2}\n',
      },
    }),
  ])
  for (const r of made) if (r.status !== 201) throw new Error(r.text)
  const agent = await env.request('POST', '/api/v1/agents', {
    body: { namespace: 'cli', name: 'talker', system_prompt: 'Talk.', enabled_functions: ['cli/double'] },
  })
  if (agent.status !== 201) throw new Error(agent.text)
  admin = cliHome(t, env.base)
  const login = await admin.run(['login', '--token', env.adminToken])
  if (login.code !== 0) throw new Error(login.stderr)
})

t.test('run: the result on stdout; exit 1 on failure', async (t) => {
  const ok = await admin.run(['run', 'cli/double', '--input', '{"x": 21}'])
  t.equal(ok.code, 0, ok.stderr)
  t.same(JSON.parse(ok.stdout), { y: 42 })
  const json = await admin.run(['run', 'cli/double', '--input', '{"x": 1}', '--output', 'json'])
  t.match(JSON.parse(json.stdout), { status: 'success', result: { y: 2 } })
  const failed = await admin.run(['run', 'cli/double', '--input', '{"fail": true}'])
  t.equal(failed.code, 1)
  t.match(failed.stderr, /error: .*asked to fail/)
  const missing = await admin.run(['run', 'cli/nope'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /404/)
  const badInput = await admin.run(['run', 'cli/double', '--input', '{nope'])
  t.equal(badInput.code, 1)
  t.match(badInput.stderr, /--input is not JSON/)
})

t.test('chat --message: the answer streams as it is written, tool calls shown', async (t) => {
  llm.push(
    { tool_calls: [{ id: 'c1', name: 'cli__double', arguments: { x: 4 } }] },
    { text: ['Eight', ' it', ' is', '.'], chunk_delay_ms: 200 },
  )
  const live = admin.spawn(['chat', 'cli/talker', '--message', 'double 4'])
  // the first tokens are on stdout while the turn is still being written
  await live.waitFor(/Eight/)
  t.notMatch(live.stdout(), /is\./, 'the first token arrives before the last is written')
  t.equal(await live.exited, 0, live.stderr())
  t.match(live.stdout(), /⚙ cli__double\(.*"x":\s*4/)
  t.match(live.stdout(), /✓ cli__double → \{"y":8\}/)
  t.match(live.stdout(), /Eight it is\.\n$/)
})

t.test('chat: lines typed are messages; a failing turn ends with the error', async (t) => {
  llm.push({ text: 'first answer' }, { error: { status: 400, body: { error: { message: 'bad request' } } } })
  const live = admin.spawn(['chat', 'cli/talker'])
  await live.waitFor(/Chat .* with cli\/talker/)
  live.proc.stdin?.write('hello\n')
  await live.waitFor(/first answer/)
  live.proc.stdin?.write('again\n')
  await live.waitFor(/error: /)
  live.proc.stdin?.end()
  t.equal(await live.exited, 0)
})

t.test('chat: a tool call waiting for approval is asked about; y runs it and the turn goes on', async (t) => {
  const fn = await env.request('POST', '/api/v1/functions', {
    body: {
      namespace: 'cli',
      name: 'guarded',
      requires_approval: true,
      code: 'def handler(input, context):\n    return {"done": True}\n',
    },
  })
  t.equal(fn.status, 201, fn.text)
  const agent = await env.request('POST', '/api/v1/agents', {
    body: { namespace: 'cli', name: 'careful', system_prompt: 'Ask first.', enabled_functions: ['cli/guarded'] },
  })
  t.equal(agent.status, 201, agent.text)
  llm.reset()
  llm.push({ tool_calls: [{ id: 'g1', name: 'cli__guarded', arguments: { what: 'it' } }] }, { text: 'All done.' })
  const live = admin.spawn(['chat', 'cli/careful', '--message', 'do it'])
  await live.waitFor(/\? allow cli\/guarded\(\{"what":"it"\}\)\? \[y\/N\]/)
  live.proc.stdin?.end('y\n')
  t.equal(await live.exited, 0, live.stderr())
  const after = llm.requests.at(-1)?.body['messages'] as { role: string; content: unknown }[]
  t.match(JSON.stringify(after.filter((m) => m.role === 'tool')), /done.*true/, 'the approved tool ran')
  t.match(live.stdout(), /All done\.\n$/)

  llm.push({ tool_calls: [{ id: 'g2', name: 'cli__guarded', arguments: {} }] }, { text: 'Not allowed, fine.' })
  const refused = admin.spawn(['chat', 'cli/careful', '--message', 'do it again'])
  await refused.waitFor(/\[y\/N\]/)
  refused.proc.stdin?.end('n\n')
  t.equal(await refused.exited, 0, refused.stderr())
  t.match(refused.stdout(), /Not allowed, fine\./)
})

t.test(
  'chat: Ctrl-C stops the turn being written (its provider call is cancelled) and gives the prompt back',
  async (t) => {
    llm.reset()
    llm.push({
      text: ['Slow', ' words', ' keep', ' coming', ' for', ' a', ' long', ' while', '.'],
      chunk_delay_ms: 1_000,
    })
    const live = admin.spawn(['chat', 'cli/talker'])
    await live.waitFor(/Chat .* with cli\/talker/)
    live.proc.stdin?.write('talk slowly\n')
    await live.waitFor(/Slow/)
    live.proc.kill('SIGINT')
    await live.waitFor(/\(stopped\)/)
    t.equal(live.proc.exitCode, null, 'the chat goes on')
    await eventually(
      async () => (llm.requests.some((r) => r.closed_early === true) ? true : undefined),
      'the provider call cancelled once nobody listens',
    )
    t.notMatch(live.stdout(), /long while/, 'the rest of the turn is not printed')
    live.proc.stdin?.end()
    t.equal(await live.exited, 0)
  },
)

t.test("events tail: a run is seen live; a user sees its own runs, not the admin's", async (t) => {
  const user = await env.createUser('cli-events@test.local')
  const userHome = cliHome(t, env.base)
  await userHome.run(['login', '--token', user.token])
  const tail = admin.spawn(['events', 'tail', 'cli.double.>', '--output', 'json'])
  const userTail = userHome.spawn(['events', 'tail'])
  await tail.waitFor(/Following events\.execution\.cli\.double\.>/)
  await userTail.waitFor(/Following/)
  const run = await admin.run(['run', 'cli/double', '--input', '{"x": 5}'])
  t.equal(run.code, 0, run.stderr)
  await tail.waitFor(/"status":"completed"/)
  const events = tail
    .stdout()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { namespace: string; name: string; status: string; execution_id: string })
  t.ok(
    events.every((e) => e.namespace === 'cli' && e.name === 'double'),
    'only the filter',
  )
  t.ok(
    events.some((e) => e.status === 'running'),
    'the run is seen running',
  )
  // a user holding no grant on cli/double does not see its runs; once it may read the function, it does
  t.notMatch(userTail.stdout(), /cli\/double/, "the admin's runs are not shown to the user")
  await env.sql(
    `insert into roles (name, permissions) values ('cli-readers', '{"platform.functions/cli/double.read:all": true}')`,
  )
  await env.sql(`insert into user_roles (user_id, role_id) select $1, id from roles where name = 'cli-readers'`, [
    user.id,
  ])
  // the relay re-reads the principal on its heartbeat; a new tail reads it at once
  const readerTail = userHome.spawn(['events', 'tail', 'cli.>'])
  await readerTail.waitFor(/Following/)
  const again = await admin.run(['run', 'cli/double', '--input', '{"x": 6}'])
  t.equal(again.code, 0, again.stderr)
  await readerTail.waitFor(/cli\/double completed/)
  readerTail.proc.kill('SIGINT')
  t.equal(await readerTail.exited, 0)
  tail.proc.kill('SIGINT')
  t.equal(await tail.exited, 0, 'Ctrl-C ends the tail with 0')
  userTail.proc.kill('SIGINT')
  await userTail.exited
})

t.test('events stream: a filter that is not a subject filter is refused', async (t) => {
  const r = await env.request('GET', '/api/v1/events/stream?filter=a..b')
  t.equal(r.status, 422)
  const anon = await env.request('GET', '/api/v1/events/stream', { token: null })
  t.equal(anon.status, 401)
})
