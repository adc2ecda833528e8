import t from 'tap'
import type { Config } from '../../src/kernel/config.ts'
import { runTool, storedResult } from '../../src/chats/run-tool.ts'
import type { Tool, ToolContext } from '../../src/feature/tools.ts'

/*
 * One tool call as the turn runs it (src/chats/run-tool.ts, importable since the turn's closure
 * was split): the model's arguments parsed, every failure turned into an `{error}` result the
 * model reads instead of failing the turn, and stored results bounded by TOOL_RESULT_MAX_SIZE.
 */

const seen: Record<string, unknown>[] = []
const tool = (run: Tool['run']): Tool => ({ name: 't', description: '', parameters: {}, requiresApproval: false, run })
const echo = tool(async (args) => {
  seen.push(args)
  return { ok: true }
})
const ctx = {} as ToolContext
const call = (args: string) => ({ id: 'call_1', type: 'function' as const, function: { name: 't', arguments: args } })

t.test(
  'arguments: an object is passed, empty or non-object JSON becomes {}, invalid JSON is an error result',
  async (t) => {
    seen.length = 0
    t.same(await runTool(echo, call('{"a":1}'), ctx), { ok: true })
    t.same(await runTool(echo, call(''), ctx), { ok: true })
    t.same(await runTool(echo, call('[1,2]'), ctx), { ok: true })
    t.same(await runTool(echo, call('null'), ctx), { ok: true })
    t.same(seen, [{ a: 1 }, {}, {}, {}])
    t.same(await runTool(echo, call('{not json'), ctx), { error: 'the arguments were not valid JSON' })
    t.equal(seen.length, 4, 'the tool did not run on invalid JSON')
  },
)

t.test('a throwing tool answers its message as an error result', async (t) => {
  const failing = tool(async () => {
    throw new Error('the service is down')
  })
  t.same(await runTool(failing, call('{}'), ctx), { error: 'the service is down' })
})

t.test('stored results: as they are within TOOL_RESULT_MAX_SIZE, truncated with the marker beyond it', async (t) => {
  const config = { TOOL_RESULT_MAX_SIZE: 200 } as Config
  t.equal(storedResult(config, 'short'), 'short')
  t.equal(storedResult(config, { a: 1 }), '{"a":1}')
  t.equal(storedResult(config, undefined), 'null')
  const long = storedResult(
    config,
    Array.from({ length: 100 }, (_, i) => i),
  )
  t.ok(long.length <= 200)
  t.match(JSON.parse(long) as unknown[], [0, 1, 2])
  t.match((JSON.parse(long) as unknown[]).at(-1), { _truncated: true, total: 100 })
})
