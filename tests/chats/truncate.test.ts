import t from 'tap'
import type { Config } from '../../src/kernel/config.ts'
import { contextHistory } from '../../src/chats/context-window.ts'
import type { ContextMessage } from '../../src/chats/transcript.ts'
import { truncateForContext } from '../../src/chats/truncate.ts'

/*
 * Tool results for the LLM context (src/chats/truncate.ts, src/chats/context-window.ts): JSON
 * lists — also as the stored JSON text, and as the largest member of an object — trimmed to whole
 * elements with the marker; other long values clipped; only the last TOOL_RESULT_MAX_INLINE tool
 * results inline, the last round's always.
 */
const rows = Array.from({ length: 500 }, (_, i) => ({ id: i, name: `row number ${String(i)}` }))

t.test('a list, as a value or as JSON text, keeps whole elements and ends with the marker', async (t) => {
  for (const given of [rows, JSON.stringify(rows)]) {
    const out = truncateForContext(given, 2000)
    t.ok(out.length <= 2000, `within the limit (${String(out.length)})`)
    const list = JSON.parse(out) as unknown[]
    const marker = list.at(-1) as { _truncated: boolean; returned: number; total: number }
    t.same(Object.keys(marker), ['_truncated', 'returned', 'total'])
    t.match(marker, { _truncated: true, total: 500 })
    t.equal(list.length - 1, marker.returned, 'returned counts the elements kept')
    t.same(list.slice(0, -1), rows.slice(0, marker.returned), 'whole elements, in order')
    t.ok(marker.returned > 10, 'as many as fit')
  }
})

t.test('an object whose largest member is a list: that list is trimmed, the other members kept', async (t) => {
  const out = truncateForContext(JSON.stringify({ query: 'all rows', count: 500, rows }), 2000)
  t.ok(out.length <= 2000)
  const v = JSON.parse(out) as { query: string; count: number; rows: unknown[] }
  t.equal(v.query, 'all rows')
  t.equal(v.count, 500)
  const marker = v.rows.at(-1) as { returned: number }
  t.match(marker, { _truncated: true, total: 500 })
  t.same(v.rows.slice(0, -1), rows.slice(0, marker.returned))
})

t.test('long text, and JSON with no list to trim, is clipped with the marker', async (t) => {
  const text = 'x'.repeat(5000)
  const out = JSON.parse(truncateForContext(text, 1000)) as {
    _truncated: boolean
    returned: number
    total: number
    content: string
  }
  t.match(out, { _truncated: true, total: 5000 })
  t.equal(out.content, 'x'.repeat(out.returned))
  const big = JSON.stringify({ blob: 'y'.repeat(5000), list: [1, 2] })
  const clipped = truncateForContext(big, 1000)
  t.ok(clipped.length <= 1000)
  t.match(
    JSON.parse(clipped),
    { _truncated: true, total: big.length },
    'the other members alone are too long: clipped as text',
  )
  t.match(
    JSON.parse(truncateForContext(`[not json ${'z'.repeat(300)}`, 150)),
    { _truncated: true, total: 310 },
    'text that only looks like JSON is clipped as text',
  )
  t.equal(truncateForContext('[1,2]', 100), '[1,2]', 'short results are as they are')
})

t.test('only the last TOOL_RESULT_MAX_INLINE tool results stay inline; the last round always', async (t) => {
  const call = (id: string): ContextMessage => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'f', arguments: '{}' } }],
    tool_call_id: null,
  })
  const result = (id: string): ContextMessage => ({
    role: 'tool',
    content: `{"r":"${id}"}`,
    tool_calls: null,
    tool_call_id: id,
  })
  const window: ContextMessage[] = [result('c0'), { role: 'user', content: 'go', tool_calls: null, tool_call_id: null }]
  for (const id of ['c1', 'c2', 'c3', 'c4']) window.push(call(id), result(id))
  const config = (inline: number) =>
    ({ TOOL_RESULT_CONTEXT_MAX_SIZE: 10_000, TOOL_RESULT_MAX_INLINE: inline }) as Config
  const shown = (inline: number) =>
    contextHistory(config(inline), window)
      .filter((m) => m.role === 'tool')
      .map((m) => [
        m.tool_call_id,
        (JSON.parse(m.content ?? '') as Record<string, unknown>)['_omitted'] === true ? 'ref' : 'inline',
      ])
  t.equal(contextHistory(config(5), window)[0]?.role, 'user', 'a leading orphan tool result is left out')
  t.same(shown(2), [
    ['c1', 'ref'],
    ['c2', 'ref'],
    ['c3', 'inline'],
    ['c4', 'inline'],
  ])
  t.same(
    shown(0),
    [
      ['c1', 'ref'],
      ['c2', 'ref'],
      ['c3', 'ref'],
      ['c4', 'inline'],
    ],
    'the results the model answers now are always inline',
  )
  t.same(shown(5), [
    ['c1', 'inline'],
    ['c2', 'inline'],
    ['c3', 'inline'],
    ['c4', 'inline'],
  ])
  const ref = JSON.parse(
    contextHistory(config(0), window).find((m) => m.tool_call_id === 'c1')?.content ?? '',
  ) as Record<string, unknown>
  t.match(ref, { _omitted: true, tool_call_id: 'c1', characters: 10 })
})
