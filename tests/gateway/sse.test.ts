import t from 'tap'
import { connect as netConnect, createServer, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import { Type as T } from '@sinclair/typebox'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { pino } from 'pino'
import { startGateway, type Gateway } from '../../gateway/server.ts'
import { bind } from '../../src/api/bind.ts'
import { defineRoute } from '../../src/api/route.ts'
import { serveRpc } from '../../src/api/rpc-server.ts'
import { issueAccessToken } from '../../src/auth/tokens.ts'
import { AppError } from '../../src/kernel/errors.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { provisionNats } from '../../src/platform/nats.ts'
import { hasListeners } from '../../src/streaming/listeners.ts'
import { newChannelId, publishStreamEvent, publishStreamEventNoAck, streamReply } from '../../src/streaming/channel.ts'
import { eventually } from '../helpers/eventually.ts'
import { SECRET_KEY } from '../helpers/env.ts'
import { readServices } from '../setup/services.ts'

/*
 * Server-Sent Events through the gateway (gateway/sse.ts): a gateway started with test-only stream
 * routes whose handlers publish on the channel with publishStreamEvent, against the run's real
 * nats-server (own NATS prefix, SSE stream provisioned like the platform does).
 */
const services = readServices()
const nc = await connect({ servers: services.natsUrl })
const prefix = `t${String(process.pid)}_sse`
const names = natsNames(prefix)
const quiet = createLogger({ level: 'silent' })
await provisionNats(nc, names, quiet)
const js = jetstream(nc)
/** Publishers still running (a dropped client's channel keeps being written): awaited before closing. */
const producers = new Set<Promise<void>>()
const track = (p: Promise<void>) => {
  producers.add(p)
  void p.finally(() => producers.delete(p))
}
t.teardown(async () => {
  await Promise.allSettled([...producers])
  const jsm = await jetstreamManager(nc)
  for await (const name of jsm.streams.names())
    if (name.startsWith(`${prefix}_`) || name.startsWith(`KV_${prefix}_`)) await jsm.streams.delete(name)
  await nc.close()
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const token = await issueAccessToken(
  SECRET_KEY,
  { sub: '00000000-0000-4000-8000-000000000001', email: 'sse@test.local' },
  15,
)

const Produce = T.Object({
  count: T.Integer({ minimum: 0 }),
  delayMs: T.Integer({ minimum: 0 }),
  early: T.Optional(T.Integer({ minimum: 0 })),
  size: T.Optional(T.Integer({ minimum: 0 })),
  noAck: T.Optional(T.Boolean()),
  live: T.Optional(T.Boolean()),
})
const base = { surface: 'runtime', tags: ['test'], auth: true, target: 'rpc' } as const
const R = {
  produce: defineRoute({
    ...base,
    tags: ['test'],
    id: 'test.sse.produce',
    method: 'POST',
    path: '/sse/produce',
    summary: 'new stream',
    body: Produce,
    stream: { format: 'platform' },
  }),
  resume: defineRoute({
    ...base,
    tags: ['test'],
    id: 'test.sse.resume',
    method: 'GET',
    path: '/sse/{channel_id}',
    summary: 'resume',
    params: T.Object({ channel_id: T.String() }),
    stream: { format: 'platform' },
  }),
  openai: defineRoute({
    ...base,
    tags: ['test'],
    id: 'test.sse.openai',
    method: 'POST',
    path: '/sse/openai',
    summary: 'openai chunks',
    body: Produce,
    stream: { format: 'openai' },
  }),
  silent: defineRoute({
    ...base,
    tags: ['test'],
    id: 'test.sse.silent',
    method: 'POST',
    path: '/sse/silent',
    summary: 'a stream nobody publishes on',
    stream: { format: 'platform' },
  }),
  refuse: defineRoute({
    ...base,
    tags: ['test'],
    id: 'test.sse.refuse',
    method: 'POST',
    path: '/sse/refuse',
    summary: 'a stream route answering plain JSON',
    stream: { format: 'platform' },
  }),
}
const routes = Object.values(R)

/** Every channel the produce handler wrote, with its events' payloads (i = index). */
const produced = new Map<string, number>()

async function produce(
  channel: string,
  p: { count: number; delayMs: number; size?: number; noAck?: boolean; live?: boolean },
  from: number,
): Promise<void> {
  const pad = 'x'.repeat(p.size ?? 0)
  // `live`: first wait until the gateway relays the channel (it counts the stream as a listener once it started).
  if (p.live === true)
    await eventually(async () => ((await hasListeners(nc, names, channel)) ? true : undefined), 'the stream is live')
  for (let i = from; i < p.count; i++) {
    if (p.delayMs > 0) await sleep(p.delayMs)
    const ev = { event: 'message', data: { i, content: `part ${String(i)}`, pad } }
    if (p.noAck === true) publishStreamEventNoAck(nc, names, channel, ev)
    else await publishStreamEvent(js, names, channel, ev)
  }
  await publishStreamEvent(js, names, channel, { event: 'done', data: { status: 'completed' } })
}

const bound = [
  bind(R.produce, async ({ body: p, request }) => {
    const channel = request.streamChannelId as string
    produced.set(channel, p.count)
    // `early` events are stored before the reply: the gateway must not miss them.
    const early = Math.min(p.early ?? 0, p.count)
    for (let i = 0; i < early; i++)
      await publishStreamEvent(js, names, channel, {
        event: 'message',
        data: { i, content: `early ${String(i)}`, pad: '' },
      })
    track(produce(channel, p, early))
    return streamReply(channel)
  }),
  bind(R.resume, async ({ params, request }) => streamReply(params.channel_id, request.streamLastId)),
  bind(R.openai, async ({ body: p, request }) => {
    const channel = request.streamChannelId as string
    track(
      (async () => {
        for (let i = 0; i < p.count; i++) {
          await sleep(p.delayMs)
          await publishStreamEvent(js, names, channel, {
            event: 'message',
            data: {
              id: 'chatcmpl-1',
              object: 'chat.completion.chunk',
              choices: [{ index: 0, delta: { content: `t${String(i)}` } }],
            },
          })
        }
        await publishStreamEvent(js, names, channel, { event: 'done', data: { status: 'completed' } })
      })(),
    )
    return streamReply(channel)
  }),
  bind(R.silent, async ({ request }) => streamReply(request.streamChannelId as string)),
  bind(R.refuse, async () => {
    throw new AppError(404, 'chat.not_found', 'no such chat')
  }),
]
// no database here: the caller the gateway verified is the principal (these stubs never check permissions)
const rpc = serveRpc({
  nc,
  names,
  routes: bound,
  principal: async (caller) => ({ userId: caller.sub, email: 'sse@test.local', permissions: [] }),
  log: quiet,
})
t.teardown(() => rpc.close())

const logged: Record<string, unknown>[] = []
const capture = pino(
  { level: 'warn' },
  new Writable({
    write(chunk: Buffer, _enc, cb) {
      logged.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>)
      cb()
    },
  }),
)

async function gateway(sse: {
  pingMs?: number
  idleTimeoutMs?: number
  maxBufferBytes?: number
}): Promise<{ gw: Gateway; url: string }> {
  const gw = await startGateway(
    {
      nc,
      names,
      routes,
      log: capture,
      secretKey: SECRET_KEY,
      corsOrigins: '',
      maxBodyBytes: 65536,
      version: 'test',
      sse,
    },
    '127.0.0.1',
    0,
  )
  t.teardown(() => gw.close())
  return { gw, url: `http://127.0.0.1:${String(gw.port)}` }
}
const main = await gateway({ pingMs: 60_000, idleTimeoutMs: 60_000, maxBufferBytes: 256 * 1024 })

interface SseEvent {
  id: string | undefined
  event: string
  data: string
}
interface SseRead {
  status: number
  headers: Headers
  events: SseEvent[]
  comments: string[]
  /** The response body ended (not aborted by us). */
  ended: boolean
  raw: string
}

/**
 * Opens an SSE request and parses events until the body ends, or until `stopAfter` returns true
 * for the events so far (then the request is aborted, as a client going away).
 */
async function sse(
  url: string,
  init: {
    method?: string
    body?: unknown
    headers?: Record<string, string>
    stopAfter?: (events: SseEvent[]) => boolean
  } = {},
): Promise<SseRead> {
  const ctrl = new AbortController()
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...init.headers }
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers,
    signal: ctrl.signal,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  })
  const out: SseRead = { status: res.status, headers: res.headers, events: [], comments: [], ended: false, raw: '' }
  if (res.body === null) return out
  const decoder = new TextDecoder()
  let buf = ''
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      const text = decoder.decode(chunk, { stream: true })
      out.raw += text
      buf += text
      let cut: number
      while ((cut = buf.indexOf('\n\n')) !== -1) {
        const block = buf.slice(0, cut)
        buf = buf.slice(cut + 2)
        const ev: SseEvent = { id: undefined, event: 'message', data: '' }
        let isEvent = false
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) {
            out.comments.push(line.slice(1).trim())
            continue
          }
          isEvent = true
          if (line.startsWith('id: ')) ev.id = line.slice(4)
          else if (line.startsWith('event: ')) ev.event = line.slice(7)
          else if (line.startsWith('data: ')) ev.data += line.slice(6)
        }
        if (isEvent) out.events.push(ev)
      }
      if (init.stopAfter?.(out.events) === true) {
        ctrl.abort()
        return out
      }
    }
    out.ended = true
  } catch (err) {
    if (!ctrl.signal.aborted) throw err
  }
  return out
}

const indexes = (events: SseEvent[]) =>
  events.filter((e) => e.event === 'message').map((e) => (JSON.parse(e.data) as { i: number }).i)
const ids = (events: SseEvent[]) => events.map((e) => Number(e.id))
const range = (a: number, b: number) => Array.from({ length: b - a }, (_, k) => a + k)
const increasing = (xs: number[]) => xs.every((x, k) => k === 0 || x > (xs[k - 1] as number))

t.test('a new stream: every event in order with increasing ids, early ones too, ends after done', async (t) => {
  const r = await sse(`${main.url}/sse/produce`, { method: 'POST', body: { count: 20, delayMs: 5, early: 5 } })
  t.equal(r.status, 200)
  t.match(r.headers.get('content-type'), /^text\/event-stream/)
  t.equal(r.headers.get('cache-control'), 'no-cache')
  t.match(r.headers.get('x-channel-id'), /^[A-Za-z0-9_-]{22}$/)
  t.same(indexes(r.events), range(0, 20), 'all 20 events, the 5 published before the reply included')
  t.ok(
    r.events.every((e) => /^\d+$/.test(e.id ?? '')),
    'every event has an id',
  )
  t.ok(increasing(ids(r.events)), 'ids increase')
  t.equal(r.events.at(-1)?.event, 'done')
  t.same(JSON.parse(r.events.at(-1)?.data ?? ''), { status: 'completed' })
  t.ok(r.ended, 'the response ends after done')
  t.match(r.raw, /^:\n\nid: \d+\nevent: message\ndata: \{"i":0,/, 'exact framing')
  await eventually(async () => (main.gw.sseStreams() === 0 ? true : undefined), 'no stream left open')
})

t.test('fire-and-forget publishing keeps the order; events arriving together leave in one write', async (t) => {
  const before = main.gw.sseStats()
  // `live`: the burst starts once the stream is live, so it is relayed as it arrives (not held, then ended in one write).
  const r = await sse(`${main.url}/sse/produce`, {
    method: 'POST',
    body: { count: 200, delayMs: 0, noAck: true, live: true },
  })
  t.same(indexes(r.events), range(0, 200))
  t.ok(increasing(ids(r.events)))
  t.equal(r.events.at(-1)?.event, 'done')
  const after = main.gw.sseStats()
  const events = after.events - before.events
  const writes = after.writes - before.writes
  t.equal(events, 201, 'every event counted once')
  // 200 events published in one go reach the gateway in a few socket reads: one write per read, not per event.
  t.ok(writes > 0 && writes < events / 2, `${String(writes)} corked writes for ${String(events)} events`)
})

t.test(
  'disconnect after N events, resume with Last-Event-ID while events keep flowing: no gap, no duplicate',
  async (t) => {
    const first = await sse(`${main.url}/sse/produce`, {
      method: 'POST',
      body: { count: 40, delayMs: 15 },
      stopAfter: (evs) => evs.length >= 10,
    })
    t.equal(first.ended, false, 'the first connection was cut by the client')
    t.equal(first.events.length, 10)
    await eventually(
      async () => (main.gw.sseStreams() === 0 ? true : undefined),
      'the aborted stream is unsubscribed at once',
      5_000,
    )
    const channel = first.headers.get('x-channel-id') as string
    const last = first.events.at(-1)?.id as string
    const rest = await sse(`${main.url}/sse/${channel}`, { headers: { 'last-event-id': last } })
    t.equal(rest.status, 200)
    t.ok(rest.ended)
    const all = [...first.events, ...rest.events]
    t.same(indexes(all), range(0, 40), 'every event exactly once across both connections')
    t.ok(increasing(ids(all)), 'ids increase across the reconnect')
    t.equal(rest.events.at(-1)?.event, 'done')
    t.ok(produced.has(channel))
  },
)

t.test('several reconnects in a row while events flow', async (t) => {
  let got = await sse(`${main.url}/sse/produce`, {
    method: 'POST',
    body: { count: 60, delayMs: 10 },
    stopAfter: (evs) => evs.length >= 7,
  })
  const channel = got.headers.get('x-channel-id') as string
  const all = [...got.events]
  for (let round = 0; round < 20 && all.at(-1)?.event !== 'done'; round++) {
    got = await sse(`${main.url}/sse/${channel}`, {
      headers: { 'last-event-id': all.at(-1)?.id as string },
      stopAfter: (evs) => evs.length >= 9,
    })
    all.push(...got.events)
  }
  t.same(indexes(all), range(0, 60))
  t.ok(increasing(ids(all)))
  t.equal(all.at(-1)?.event, 'done')
})

t.test('a long backlog (replayed through an ordered consumer) while events keep flowing', async (t) => {
  const first = await sse(`${main.url}/sse/produce`, {
    method: 'POST',
    body: { count: 400, delayMs: 1 },
    stopAfter: (evs) => evs.length >= 5,
  })
  const channel = first.headers.get('x-channel-id') as string
  await sleep(300) // a backlog of some hundred events builds up
  const rest = await sse(`${main.url}/sse/${channel}`, {
    headers: { 'last-event-id': first.events.at(-1)?.id as string },
  })
  const all = [...first.events, ...rest.events]
  t.same(indexes(all), range(0, 400))
  t.ok(increasing(ids(all)))
  t.equal(all.at(-1)?.event, 'done')
  const stored = await sse(`${main.url}/sse/${channel}?last_id=0`)
  t.same(stored.events, all, 'the finished channel replays whole, the same ids and payloads')
})

t.test('?last_id= resumes too, and a finished channel replays from the stream', async (t) => {
  const whole = await sse(`${main.url}/sse/produce`, { method: 'POST', body: { count: 12, delayMs: 0 } })
  const channel = whole.headers.get('x-channel-id') as string
  const cut = whole.events[4]?.id as string
  const rest = await sse(`${main.url}/sse/${channel}?last_id=${cut}`)
  t.same(rest.events, whole.events.slice(5), 'exactly the events after last_id, same ids and payloads')
  t.ok(rest.ended)
  const header = await sse(`${main.url}/sse/${channel}?last_id=1`, {
    headers: { 'last-event-id': whole.events[9]?.id as string },
  })
  t.same(header.events, whole.events.slice(10), 'Last-Event-ID wins over ?last_id=')
  const everything = await sse(`${main.url}/sse/${channel}`)
  t.same(everything.events, whole.events, 'no last id on another channel: the whole channel')
})

t.test('a malformed Last-Event-ID is a 422', async (t) => {
  const r = await fetch(`${main.url}/sse/${newChannelId()}`, {
    headers: { authorization: `Bearer ${token}`, 'last-event-id': 'abc' },
  })
  t.equal(r.status, 422)
  t.match(await r.json(), { code: 'request.invalid' })
  t.equal(main.gw.sseStreams(), 0)
})

t.test('a stream route answering plain JSON passes it through; 401 without a token', async (t) => {
  const refused = await fetch(`${main.url}/sse/refuse`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  })
  t.equal(refused.status, 404)
  t.match(refused.headers.get('content-type'), /application\/json/)
  t.match(await refused.json(), { code: 'chat.not_found', detail: 'no such chat' })
  const anonymous = await fetch(`${main.url}/sse/produce`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ count: 1, delayMs: 0 }),
  })
  t.equal(anonymous.status, 401)
  t.equal(anonymous.headers.get('www-authenticate'), 'Bearer')
  t.match(await anonymous.json(), { code: 'auth.unauthorized' })
  const invalid = await fetch(`${main.url}/sse/produce`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ count: 'x' }),
  })
  t.equal(invalid.status, 422)
  t.equal(main.gw.sseStreams(), 0, 'nothing left listening')
})

t.test('openai format: data lines only, ending with [DONE]', async (t) => {
  const r = await sse(`${main.url}/sse/openai`, { method: 'POST', body: { count: 5, delayMs: 2 } })
  t.equal(r.status, 200)
  t.ok(r.ended)
  t.notMatch(r.raw, /^(id|event):/m, 'no id: or event: lines')
  const datas = r.events.map((e) => e.data)
  t.equal(datas.at(-1), '[DONE]')
  t.same(
    datas
      .slice(0, -1)
      .map((d) => (JSON.parse(d) as { choices: { delta: { content: string } }[] }).choices[0]?.delta.content),
    range(0, 5).map((i) => `t${String(i)}`),
  )
})

t.test('pings while idle, then the idle timeout ends the stream with an error event', async (t) => {
  const short = await gateway({ pingMs: 100, idleTimeoutMs: 900 })
  const r = await sse(`${short.url}/sse/silent`, { method: 'POST' })
  t.equal(r.status, 200)
  t.ok(r.comments.filter((c) => c === 'ping').length >= 3, `pings arrive (${String(r.comments.length)} comments)`)
  t.match(r.raw, /: ping\n\n/)
  t.equal(r.events.length, 1)
  t.equal(r.events[0]?.event, 'error')
  t.equal(r.events[0]?.id, '0', 'the id repeats the last relayed event id (none yet)')
  t.match(JSON.parse(r.events[0]?.data ?? ''), { code: 'stream.timeout', detail: String })
  t.ok(r.ended)
})

t.test('a slow reader is dropped at the buffer cap and does not stall other streams', async (t) => {
  logged.length = 0
  // A raw client that never reads: the kernel's socket buffers fill, then the gateway's cap.
  const slow = netConnect(main.gw.port, '127.0.0.1')
  // 1 ms apart: the stream is live when the socket blocks (a burst before the reply would be
  // replayed from the stream instead, paced by the socket).
  const body = JSON.stringify({ count: 400, delayMs: 1, size: 32 * 1024, noAck: true })
  await new Promise<void>((resolve) => slow.once('connect', () => resolve()))
  slow.write(
    `POST /sse/produce HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: ${String(body.length)}\r\n\r\n${body}`,
  )
  slow.pause()
  await sleep(100)
  const fast = await sse(`${main.url}/sse/produce`, { method: 'POST', body: { count: 30, delayMs: 10 } })
  t.same(indexes(fast.events), range(0, 30), 'the other stream got everything meanwhile')
  t.ok(fast.ended)
  await eventually(
    async () => (logged.some((l) => /too slow/.test(String(l['msg']))) ? true : undefined),
    'the drop is logged',
    15_000,
  )
  // Now read what the kernel held: the connection was closed without the terminal event.
  let received = ''
  slow.on('data', (d: Buffer) => (received += d.toString('latin1')))
  const closed = new Promise<void>((resolve) => slow.once('close', () => resolve()))
  slow.on('error', () => undefined)
  slow.resume()
  await closed
  t.match(received, /^HTTP\/1\.1 200 OK/)
  t.notMatch(received, /event: done/, 'dropped before the end: the client resumes with Last-Event-ID')
  await eventually(async () => (main.gw.sseStreams() === 0 ? true : undefined), 'the slow stream is gone', 5_000)
})

t.test("the gateway's NATS connection drops mid-stream: after the reconnect it replays what it missed", async (t) => {
  // A TCP proxy between this gateway and nats-server that the test can cut; the publisher stays connected.
  const upstream = new URL(services.natsUrl)
  const sockets = new Set<Socket>()
  let refusing = false
  const proxy = createServer((client) => {
    if (refusing) {
      client.destroy()
      return
    }
    const server = netConnect(Number(upstream.port), upstream.hostname)
    for (const [a, b] of [
      [client, server],
      [server, client],
    ] as const) {
      a.pipe(b)
      a.on('error', () => b.destroy())
      a.on('close', () => b.destroy())
      sockets.add(a)
      a.on('close', () => sockets.delete(a))
    }
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()))
  t.teardown(() => proxy.close())
  const address = proxy.address() as { port: number }
  const viaProxy = await connect({
    servers: `nats://127.0.0.1:${String(address.port)}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
  })
  t.teardown(() => viaProxy.close())
  const gw = await startGateway(
    {
      nc: viaProxy,
      names,
      routes,
      log: capture,
      secretKey: SECRET_KEY,
      corsOrigins: '',
      maxBodyBytes: 65536,
      version: 'test',
      sse: {},
    },
    '127.0.0.1',
    0,
  )
  t.teardown(() => gw.close())
  const cut = async () => {
    refusing = true
    for (const s of sockets) s.destroy()
    await sleep(400) // events published now are stored but reach no gateway
    refusing = false
  }
  let cutDone: Promise<void> | undefined
  const r = await sse(`http://127.0.0.1:${String(gw.port)}/sse/produce`, {
    method: 'POST',
    body: { count: 150, delayMs: 5 },
    stopAfter: (evs) => {
      if (evs.length >= 10 && cutDone === undefined) cutDone = cut()
      return false
    },
  })
  await cutDone
  t.ok(r.ended)
  t.same(indexes(r.events), range(0, 150), 'every event once, in order, across the NATS reconnect')
  t.ok(increasing(ids(r.events)))
  t.equal(r.events.at(-1)?.event, 'done')
})
