import t from 'tap'
import { join } from 'node:path'
import { startTestPlatform } from '../helpers/env.ts'
import { kill9, spawnReady } from '../helpers/child.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'

/*
 * A worker process killed with -9 in the middle of a streamed turn: the client is not left
 * hanging. When another worker finds the abandoned turn it ends the stream with an `error` event
 * (agent turns are never retried) and the chat takes the next message.
 */
const WORKER = join(import.meta.dirname, 'worker-platform.ts')

t.test('a lost worker ends the stream with an error and frees the chat', async (t) => {
  const llm = await startFakeLlm()
  t.teardown(() => llm.close())
  const env = await startTestPlatform(t, {
    ROLES: 'gateway,resources,actors',
    QUEUE_ACK_WAIT_SECONDS: '2',
    QUEUE_HEARTBEAT_SECONDS: '1',
  })
  const childEnv = {
    ...env.childEnv,
    QUEUE_ACK_WAIT_SECONDS: '2',
    QUEUE_HEARTBEAT_SECONDS: '1',
  }
  const first = await spawnReady(t, WORKER, childEnv)
  await env.create('/api/v1/llm-providers', llm.provider())
  await env.request('POST', '/api/v1/agents', { body: { namespace: 'loss', name: 'slow', system_prompt: 'x' } })
  const chat = (await env.request('POST', '/agents/loss/slow/chats', { body: {} })).body as { id: string }

  // a reply that streams for ~10 s: the worker is killed after the first pieces
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
  await kill9(first.proc)
  // another worker joins; it finds the abandoned turn once the ack wait ran out
  await spawnReady(t, WORKER, childEnv)
  const started = Date.now()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    text += decoder.decode(value, { stream: true })
  }
  t.match(text, /event: error\ndata: [^\n]*turn\.worker_lost/, 'the stream ends with an error event')
  t.ok(
    Date.now() - started < 30_000,
    `the client got its answer in ${String(Date.now() - started)} ms, not after the idle timeout`,
  )

  // the chat is free for the next message
  llm.push({ text: 'back again' })
  const next = await env.request('POST', `/chats/${chat.id}/messages`, { body: { content: 'again' } })
  t.equal(next.status, 200, next.text)
  t.match(next.body, { content: 'back again' })
})
