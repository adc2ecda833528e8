import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { COMMANDS } from '../../src/command-line/commands.ts'
import { CLI_REFERENCE_FILE, CLI_REFERENCE_MARKER, cliReference } from '../../src/command-line/help.ts'
import { interpolateClientEnv } from '../../src/command-line/interpolate.ts'
import type { Io } from '../../src/command-line/io.ts'
import { main } from '../../src/command-line/main.ts'
import { lineDiff, renderPlan } from '../../src/command-line/plan-text.ts'
import { tableBetweenMarkers } from '../../src/kernel/doc-table.ts'
import { cliHome } from './cli.ts'

/*
 * The command line without a platform: `--help` of every command (from the one table), usage
 * errors, the generated reference in docs/cli.md, the client-side `${VAR}` rule and the plan text.
 */
const ROOT = join(import.meta.dirname, '..', '..')

/**
 * The command's `main` in this process, its output captured: what the binary runs after loading
 * TypeScript, which costs 2-4 s of CPU a process here (one binary run per command made this file
 * outlast its time limit in a loaded suite). The binary itself is run below for the overview.
 */
async function inProcess(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const io: Io = { out: (s) => (stdout += s), err: (s) => (stderr += s), color: false }
  const code = await main(argv, io)
  return { code, stdout, stderr }
}

t.test('--help of every command, from the table', async (t) => {
  const home = cliHome(t)
  const all = await home.run(['--help'])
  t.equal(all.code, 0)
  for (const c of COMMANDS) t.match(all.stdout, c.name, `the overview lists ${c.name}`)
  for (const c of COMMANDS) {
    const r = await inProcess([...c.name.split(' '), '--help'])
    t.equal(r.code, 0, `${c.name} --help exits 0`)
    t.match(r.stdout, `Usage: platform ${c.name}`, `${c.name} --help shows its usage`)
    for (const o of c.options) t.match(r.stdout, `--${o.name}`, `${c.name} --help lists --${o.name}`)
  }
  const group = await inProcess(['config', '--help'])
  t.equal(group.code, 0)
  t.match(group.stdout, /config diff/)
})

t.test('usage errors exit 1 and say what is wrong', async (t) => {
  const home = cliHome(t)
  const unknown = await home.run(['frobnicate'])
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /unknown command frobnicate/)
  const option = await inProcess(['run', 'a/b', '--nope'])
  t.equal(option.code, 1)
  t.match(option.stderr, /unknown option --nope/)
  t.match(option.stderr, /Usage: platform run/, 'with the command usage')
  const missing = await inProcess(['config', 'diff'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /missing argument <file\|->/)
  const unreachable = await inProcess(['run', 'a/b', '--url', 'http://127.0.0.1:9'])
  t.equal(unreachable.code, 1)
  t.match(unreachable.stderr, /cannot reach http:\/\/127\.0\.0\.1:9/)
})

t.test(
  `${CLI_REFERENCE_FILE} holds the current reference (npm run --silent platform -- cli-reference --write)`,
  async (t) => {
    const text = readFileSync(join(ROOT, CLI_REFERENCE_FILE), 'utf8')
    t.equal(tableBetweenMarkers(text, CLI_REFERENCE_MARKER), cliReference())
  },
)

t.test('${VAR} from the client environment: values only, escapes kept, unset left for the server', async (t) => {
  const env = { TOKEN: 'abc', TRICKY: 'x${Y}', PORT: '8080' }
  const text = [
    'apiVersion: platform/v1',
    'kind: PlatformConfig',
    'spec:',
    '  secrets:',
    '    - name: s',
    '      value: ${TOKEN}',
    '    - name: t',
    '      value: "pre-${TRICKY}-${UNSET}"',
    '    - name: ${TOKEN}',
    '      value: $${TOKEN}',
    '  port: ${PORT}',
    '',
  ].join('\n')
  const out = interpolateClientEnv(text, env)
  t.match(out, /value: abc/)
  t.match(out, /pre-x\$\$\{Y\}-\$\{UNSET\}/, 'a replaced value is escaped; an unset variable stays')
  t.match(out, /name: abc/, 'a value named name is a value too')
  t.match(out, /value: \$\$\{TOKEN\}/, 'the escape stays escaped for the server')
  t.match(out, /port: "?8080"?/)
  t.equal(interpolateClientEnv('a: 1\n', env), 'a: 1\n', 'no placeholder: the text as it is')
  t.equal(interpolateClientEnv('a: [${TOKEN}\n', env), 'a: [${TOKEN}\n', 'unparsable: sent as it is')
})

t.test('the plan text: signs, fields, summary', async (t) => {
  const io = { out: () => undefined, err: () => undefined, color: false }
  const text = renderPlan(
    {
      success: true,
      summary: { created: 1, updated: 1, unchanged: 1, deleted: 1 },
      changes: [
        {
          action: 'created',
          resourceType: 'function',
          resourceName: 'demo/a',
          fields: [{ path: 'code', change: 'added', after: 'x' }],
        },
        {
          action: 'updated',
          resourceType: 'agent',
          resourceName: 'demo/b',
          fields: [{ path: 'model', change: 'changed', before: 'm1', after: 'm2' }],
        },
        { action: 'unchanged', resourceType: 'skill', resourceName: 'demo/c' },
        { action: 'deleted', resourceType: 'store', resourceName: 'demo/d' },
      ],
      errors: [],
      warnings: ['skill demo/e is managed by pkg:x'],
    },
    io,
    { applied: false },
  )
  t.match(text, '  + function demo/a\n      + code = "x"\n')
  t.match(text, '  ~ agent demo/b\n      ~ model: "m1" → "m2"\n')
  t.match(text, '  = skill demo/c\n')
  t.match(text, '  - store demo/d\n')
  t.match(text, '  ! skill demo/e is managed by pkg:x\n')
  t.match(text, 'Plan: 1 to create, 1 to update, 1 to delete, 1 unchanged.')
  t.match(
    renderPlan(
      {
        ...{ success: true, changes: [], errors: [], warnings: [] },
        summary: { created: 0, updated: 0, unchanged: 2, deleted: 0 },
      },
      io,
      { applied: false },
    ),
    'No changes: 2 unchanged.',
  )
  const colored = renderPlan(
    {
      success: true,
      summary: { created: 1, updated: 0, unchanged: 0, deleted: 0 },
      changes: [{ action: 'created', resourceType: 'f', resourceName: 'n' }],
      errors: [],
      warnings: [],
    },
    { ...io, color: true },
    { applied: true },
  )
  t.match(colored, '\x1b[32m  + f n\x1b[0m', 'green on a terminal')
})

t.test('a changed text of several lines: the lines that changed, under the field', async (t) => {
  t.same(lineDiff('a\nb\nc', 'a\nc\nd'), ['- b', '+ d'])
  t.same(lineDiff('x\n', 'x\n'), [])
  const io = { out: () => undefined, err: () => undefined, color: false }
  const text = renderPlan(
    {
      success: true,
      summary: { created: 0, updated: 1, unchanged: 0, deleted: 0 },
      changes: [
        {
          action: 'updated',
          resourceType: 'function',
          resourceName: 'demo/f',
          fields: [
            { path: 'code', change: 'changed', before: 'def h():\n    return 1\n', after: 'def h():\n    return 2\n' },
          ],
        },
      ],
      errors: [],
      warnings: [],
    },
    io,
    { applied: false },
  )
  t.match(text, '  ~ function demo/f\n      ~ code:\n          -     return 1\n          +     return 2\n')
})
