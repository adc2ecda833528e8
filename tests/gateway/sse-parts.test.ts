import t from 'tap'
import { frame, type SseEvent } from '../../gateway/sse-frame.ts'
import { HeldEvents } from '../../gateway/sse-held-events.ts'

/* The parts of the SSE relay (gateway/sse.ts) that need no socket: event framing and the held-events buffer. */
const json = (seq: number, event: string, value: unknown): SseEvent => ({
  seq,
  event,
  data: new TextEncoder().encode(JSON.stringify(value)),
})

t.test('frames an event in the platform and the openai format', async (t) => {
  t.equal(
    frame('platform', json(7, 'delta', { text: 'hi' })).toString(),
    'id: 7\nevent: delta\ndata: {"text":"hi"}\n\n',
  )
  t.equal(frame('openai', json(7, 'delta', { text: 'hi' })).toString(), 'data: {"text":"hi"}\n\n')
  t.equal(frame('openai', json(8, 'done', {})).toString(), 'data: [DONE]\n\n', 'done is [DONE] alone')
  t.equal(
    frame('openai', json(8, 'error', { code: 'x' })).toString(),
    'data: {"code":"x"}\n\ndata: [DONE]\n\n',
    'an error is followed by [DONE]',
  )
  t.equal(
    frame('mcp', json(9, 'progress', { jsonrpc: '2.0' })).toString(),
    'id: 9\ndata: {"jsonrpc":"2.0"}\n\n',
    'mcp: id and data, the default event type (message) for every event',
  )
  t.equal(
    frame('mcp', json(10, 'done', { jsonrpc: '2.0', id: 1 })).toString(),
    'id: 10\ndata: {"jsonrpc":"2.0","id":1}\n\n',
    'mcp: the terminal event carries the response, nothing after it',
  )
  const multiline: SseEvent = { seq: 1, event: 'note', data: new TextEncoder().encode('a\r\nb\nc') }
  t.equal(
    frame('platform', multiline).toString(),
    'id: 1\nevent: note\ndata: a\ndata: b\ndata: c\n\n',
    'each line of a payload is its own data line',
  )
})

t.test('held events overflow into `lost` instead of growing', async (t) => {
  const held = new HeldEvents(100)
  held.hold(json(1, 'delta', 'a'))
  held.hold(json(2, 'delta', 'b'))
  t.equal(held.head?.seq, 1)
  t.notOk(held.lost)
  t.same(
    held.take().map((e) => e.seq),
    [1, 2],
    'take returns them in order',
  )
  t.equal(held.head, undefined, 'and empties the buffer')
  // 44 bytes each (payload + 32): the third goes over 100.
  for (let seq = 1; seq <= 3; seq++) held.hold(json(seq, 'delta', 'x'.repeat(10)))
  t.ok(held.lost, 'over the budget: marked lost (the replay picks the events up from the stream)')
  t.equal(held.head, undefined, 'the held events are dropped')
  held.hold(json(4, 'delta', 'x'))
  t.equal(held.head?.seq, 4, 'and holding starts again')
})
