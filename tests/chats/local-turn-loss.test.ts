import t from 'tap'
import { join } from 'node:path'
import { startTestPlatform } from '../helpers/env.ts'
import { kill9, spawnReady } from '../helpers/child.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'

/*
 * A turn started in the actor host's own worker (AGENT_LOCAL_TURNS: no queue message exists for
 * it) whose process is killed with -9 mid-stream: the host that takes the chat's partition over
 * finds the job's worker dead (its watchdog, QUEUE_ACK_WAIT_SECONDS), fails the job, ends the
 * stream with an `error` event, and the chat takes the next message. Nothing the client sent
 * after that is lost.
 */
const HOST = join(import.meta.dirname, 'worker-platform.ts')

t.test('a lost actor host with a local turn ends the stream with an error and frees the chat', async (t) => {
  const llm = await startFakeLlm()
  t.teardown(() => llm.close())
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const childEnv = {
    TEST_ROLES: 'actors,workers',
    ...env.childEnv,
    QUEUE_ACK_WAIT_SECONDS: '2',
    QUEUE_HEARTBEAT_SECONDS: '1',
    ACTOR_LEASE_TTL_SECONDS: '3',
  }
  const first = await spawnReady(t, HOST, childEnv)
  await env.create('/api/v1/llm-providers', llm.provider())
  await env.request('POST', '/api/v1/agents', { body: { namespace: 'loss', name: 'local', system_prompt: 'x' } })
  const chat = (await env.request('POST', '/agents/loss/local/chats', { body: {} })).body as { id: string }

  // a reply that streams for ~10 s: the host is killed after the first pieces
  llm.push({ text: Array.from({ length: 50 }, (_, i) => `p${String(i)} `), chunk_delay_ms: 200 })
  const res = await fetch(`${env.base}/chats/${chat.id}/messages/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'go' }),
  })
  t.equal(res.status, 200)
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let text = ''
  while (!text.includes('p2 '))
    text += decoder.decode((await reader.read()).value ?? new Uint8Array(), { stream: true })
  const [job] = await env.sql<{ id: string; worker: string | null }>(
    "select id, worker from executions where chat_id = $1 and status = 'running'",
    [chat.id],
  )
  t.ok(job !== undefined, 'the turn runs as an agent job (mirrored as running)')
  await kill9(first.proc)
  // another host joins: it takes the partition over and its watchdog finds the turn's worker dead
  await spawnReady(t, HOST, childEnv)
  // a message sent meanwhile waits in the chat's mailbox and runs after the lost turn
  llm.push({ text: 'back again' })
  const next = env.request('POST', `/chats/${chat.id}/messages`, { body: { content: 'again' } })
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    text += decoder.decode(value, { stream: true })
  }
  t.match(text, /event: error\ndata: [^\n]*turn\.worker_lost/, 'the stream ends with an error event')
  const answered = await next
  t.equal(answered.status, 200, answered.text)
  t.match(answered.body, { content: 'back again' })
  const [lost] = await env.sql<{ status: string; error: string }>(
    'select status, error from executions where id = $1',
    [job?.id],
  )
  t.match(lost, { status: 'failed', error: /worker lost/ }, 'the lost turn is recorded as failed')
})
