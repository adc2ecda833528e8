import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'

/*
 * The example service is shown twice — whole in docs/events-client.md, its subscription in the
 * README — and run (killed with -9 and restarted) by client.test.ts. Both copies must be the file
 * the test runs, so neither can rot.
 */
const ROOT = join(import.meta.dirname, '..', '..')
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8')
const example = read('src/events/client/example.ts')
const tsBlocks = (md: string) => [...md.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string)
const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')

t.test('the guide shows the example service as it is', async (t) => {
  const whole = tsBlocks(read('docs/events-client.md')).filter((b) => b.startsWith("import pg from 'pg'"))
  t.equal(whole.length, 1, 'one block holds the whole service')
  t.equal(whole[0], example, 'docs/events-client.md holds src/events/client/example.ts unchanged')
})

t.test("the README's example is taken from the example service, in its order", async (t) => {
  const blocks = tsBlocks(read('README.md')).filter((b) => b.includes('agent-platform/events'))
  t.equal(blocks.length, 1, 'the README shows the client once')
  const file = lines(example)
  let at = 0
  for (const line of lines(blocks[0] as string)) {
    const found = file.indexOf(line, at)
    t.ok(found >= 0, `example.ts has, in this order: ${line}`)
    if (found >= 0) at = found + 1
  }
})
