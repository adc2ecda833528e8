import t, { type Test } from 'tap'
import type { Db } from '../../src/platform/db.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { crossingCounter, type Crossing } from '../helpers/crossings.ts'
import { eventually } from '../helpers/eventually.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'

/*
 * The crossings of one chat turn (POST /chats/{id}/messages, no tools, warm caches): the Postgres
 * round trips and acknowledged NATS operations the platform makes, listed with where in the code
 * they come from (printed as test comments), and bounded so a change that adds one to the hot path
 * fails here. Background work that is not the turn's (heartbeats, lease renewals, health) is
 * left out by its site.
 */
const BACKGROUND =
  /heartbeat|leases\.ts|runtime\/host\.ts|consumeMailbox|health|puller\.ts|timers\.ts|maintenance|expiry/

/** Lease renewals go out through the actor runtime's outbox, whose stack does not say who asked: known by their bucket. */
const isTurns = (x: Crossing): boolean =>
  x.site !== '' && !BACKGROUND.test(x.site) && !x.detail.includes('ACTOR_LEASES')

const show = (t: { comment(msg: string): void }, title: string, xs: Crossing[]) => {
  t.comment(
    `${title}: ${String(xs.filter((x) => x.what === 'pg').length)} Postgres, ${String(xs.filter((x) => x.what === 'nats').length)} NATS`,
  )
  for (const x of xs)
    t.comment(`  ${x.at.toFixed(2).padStart(7)} ms ${x.what.padEnd(4)} ${x.detail.padEnd(62)} ${x.site}`)
}

/** A platform whose default LLM provider is the fake, with the agent count/<name>. */
async function platformWithAgent(t: Test, name: string) {
  const llm = await startFakeLlm()
  t.teardown(() => llm.close())
  const env = await startTestPlatform(t)
  await env.request('POST', '/api/v1/llm-providers', {
    body: {
      name: 'fake',
      provider_type: 'openai',
      api_endpoint: llm.endpoint('openai'),
      api_key: 'k',
      default_model: 'm',
      is_default: true,
    },
  })
  await env.request('POST', '/api/v1/agents', { body: { namespace: 'count', name, system_prompt: 'You count.' } })
  return env
}

t.test('one chat turn: Postgres round trips and acknowledged NATS operations', async (t) => {
  const env = await platformWithAgent(t, 'echo')
  const chat = (await env.request('POST', '/agents/count/echo/chats', { body: {} })).body as { id: string }
  // warm: the first turn fills the caches (agent, provider client, principal, actor key)
  for (let i = 0; i < 2; i++)
    t.equal((await env.request('POST', `/chats/${chat.id}/messages`, { body: { content: 'warm' } })).status, 200)
  const executions = async () =>
    Number(
      (
        await env.sql<{ n: string }>(
          "select count(*) as n from executions where chat_id = $1 and status = 'completed'",
          [chat.id],
        )
      )[0]?.n ?? 0,
    )
  await eventually(async () => ((await executions()) === 2 ? true : undefined), 'the warm-up turns mirrored')

  const counter = crossingCounter(env.platform.nc, env.platform.db as Db, env.config.NATS_PREFIX)
  counter.start()
  const res = await env.request('POST', `/chats/${chat.id}/messages`, { body: { content: 'count me' } })
  const path = counter.stop().filter(isTurns)
  t.equal(res.status, 200, res.text)
  counter.start()
  await eventually(async () => ((await executions()) === 3 ? true : undefined), 'the counted turn mirrored')
  const after = counter.stop().filter(isTurns)
  show(t, 'request to reply', path)
  show(t, 'after the reply (until the execution row is written)', after)
  // Measured before this was bounded: 7 queries (+7 DISCARD ALL) and 14 NATS operations;
  // 2 queries and 7 NATS operations at stop 23.
  const all = [...path, ...after]
  const pg = all.filter((x) => x.what === 'pg')
  // the chat's owner spoke in it before (warm-up): no read at the door (src/chats/service.ts speakIn)
  const turnPg = pg.filter((x) => !x.site.includes('mirror.ts'))
  t.equal(
    turnPg.length,
    1,
    'the turn: one insert (the chat and its history are held by the worker, the count vouched by the chat actor)',
  )
  t.ok(
    turnPg.every((x) => x.site.includes('appendMany')),
    'no read of the chat or its history: the insert only',
  )
  t.ok(pg.length <= 4, 'plus the two execution rows of the mirror')
  // (the warm-up turn's last execution event may still be on its way when the count starts)
  t.ok(
    path.filter((x) => x.what === 'nats' && !x.site.includes('mirror.ts')).length <= 4,
    'acknowledged NATS operations: the job claim and end, the actor state twice',
  )
  t.ok(after.filter((x) => x.what === 'nats').length <= 2, 'and two execution events')
  t.notOk(
    all.some((x) => x.detail.startsWith('actor.chat.')),
    "nothing through the chat's mailbox stream: the user's message and the turn's end are told to the chat actor in-process",
  )
  t.notOk(
    all.some((x) => x.detail.startsWith('jobs.agent.')),
    'the turn started in this process, not through the JOBS queue',
  )
  t.notOk(
    all.some((x) => x.detail === 'flush'),
    'the waiter subscribed before the send (no flush)',
  )
  t.end()
})

/*
 * An agent model through the OpenAI adapter, one request: a new internal chat holding the earlier
 * messages, its turn, the reply. Listed like the chat turn above and bounded.
 */
t.test('one agent request through the adapter: Postgres round trips and acknowledged NATS operations', async (t) => {
  const env = await platformWithAgent(t, 'adapted')
  const ask = () =>
    env.request('POST', '/adapters/openai/v1/chat/completions', {
      body: {
        model: 'agent:count/adapted',
        messages: [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
          { role: 'user', content: 'three?' },
        ],
      },
    })
  // every request makes a chat of its own, on any of the 64 partitions: all of them worked here first
  await eventually(async () => {
    const shards = (await env.request('GET', '/api/v1/system/actors')).body as {
      types: { type: string; owned: number; partitions: number }[]
    }
    const chat = shards.types.find((x) => x.type === 'chat')
    return chat !== undefined && chat.owned === chat.partitions ? true : undefined
  }, 'the chat partitions owned by the host')
  for (let i = 0; i < 2; i++) t.equal((await ask()).status, 200, 'warm-up')
  const counter = crossingCounter(env.platform.nc, env.platform.db as Db, env.config.NATS_PREFIX)
  counter.start()
  const res = await ask()
  const path = counter.stop().filter(isTurns)
  t.equal(res.status, 200, res.text)
  show(t, 'adapter request to reply', path)
  // the mirror's rows and events (this request's or the warm-up's) are not on the request's path
  const own = path.filter((x) => !x.site.includes('mirror.ts'))
  t.same(
    own.filter((x) => x.what === 'pg').map((x) => x.site.split(' < ')[0]?.replace(/:\d+ /, ' ')),
    ['src/chats/store.ts Object.createInternal', 'src/chats/store.ts Object.appendMany'],
    'Postgres: the chat with its earlier messages (one insert, committed without a flush of its own), the turn: its insert only (handed the chat by its creator: history-cache.ts seedChat)',
  )
  t.ok(
    own.filter((x) => x.what === 'nats').length <= 4,
    'acknowledged NATS operations: the job claim and end, the actor state twice',
  )
  t.notOk(
    own.some((x) => x.detail.startsWith('actor.chat.')),
    'the message told to the chat actor in-process',
  )

  // streamed: the same, the internal chat's stream not recorded (nobody resumes it through the chat)
  const streamedAsk = async () => {
    const r = await fetch(`${env.base}/adapters/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'agent:count/adapted',
        stream: true,
        messages: [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
          { role: 'user', content: 'three?' },
        ],
      }),
    })
    t.equal(r.status, 200)
    return r.text()
  }
  t.match(await streamedAsk(), /\[DONE\]/, 'warm-up')
  counter.start()
  t.match(await streamedAsk(), /\[DONE\]/)
  const streamedPath = counter.stop().filter(isTurns)
  show(t, 'streamed adapter request to its last chunk', streamedPath)
  t.same(
    streamedPath
      .filter((x) => x.what === 'pg' && !x.site.includes('mirror.ts'))
      .map((x) => x.site.split(' < ')[0]?.replace(/:\d+ /, ' ')),
    ['src/chats/store.ts Object.createInternal', 'src/chats/store.ts Object.appendMany'],
    'Postgres: as without streaming (no record of the stream in the internal chat)',
  )
  t.end()
})

/*
 * A streamed chat turn (POST /chats/{id}/messages/stream, what chat UIs send): the chat's stream is
 * recorded alongside the send, the owner is known from before (no read at the door).
 */
t.test('one streamed chat turn: Postgres round trips and acknowledged NATS operations', async (t) => {
  const env = await platformWithAgent(t, 'streamed')
  const chat = (await env.request('POST', '/agents/count/streamed/chats', { body: {} })).body as { id: string }
  const streamed = async (): Promise<string> => {
    const res = await fetch(`${env.base}/chats/${chat.id}/messages/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'count me' }),
    })
    t.equal(res.status, 200)
    return res.text()
  }
  for (let i = 0; i < 2; i++) t.match(await streamed(), /event: done/, 'warm-up')
  const counter = crossingCounter(env.platform.nc, env.platform.db as Db, env.config.NATS_PREFIX)
  counter.start()
  const text = await streamed()
  const path = counter.stop().filter(isTurns)
  t.match(text, /event: done/)
  show(t, 'streamed request to its last event', path)
  const own = path.filter((x) => !x.site.includes('mirror.ts'))
  t.same(
    own.filter((x) => x.what === 'pg').map((x) => x.site.split(' < ')[0]?.replace(/:\d+ /, ' ')),
    ['src/chats/store.ts Object.setChannel', 'src/chats/store.ts Object.appendMany'],
    "Postgres: the chat's stream recorded, the turn's insert; no read at the door or in the turn",
  )
  t.notOk(
    own.some((x) => x.detail.startsWith('actor.chat.')),
    'the message told to the chat actor in-process',
  )
  t.end()
})
