import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { cliHome, type CliHome } from './cli.ts'

// Every step runs the `platform` binary as its own process (TypeScript loaded each time, 1-3 s of
// CPU on a 2-core machine): in a loaded suite this file outlasts the 180 s a file gets by default.
t.setTimeout(420_000)

/*
 * `config` and `package` against the platform's config and package routes: diff's exit codes for
 * CI (0 nothing to do, 2 changes, 1 error), the plan with field changes, `--output json`, apply,
 * export, stdin, `${VAR}` from the command's environment; a package previewed, installed with
 * variables, listed, exported, run and uninstalled.
 */
let env: TestPlatform
let cli: CliHome

t.before(async () => {
  env = await startTestPlatform(t)
  cli = cliHome(t, env.base)
  const login = await cli.run(['login', '--token', env.adminToken])
  if (login.code !== 0) throw new Error(login.stderr)
})

const config = (body: string) =>
  [
    'apiVersion: platform/v1',
    'kind: PlatformConfig',
    'metadata:',
    '  name: cli-test',
    'spec:',
    '  functions:',
    '    - namespace: cfg',
    '      name: hello',
    '      description: says ${GREETING}',
    '      code: |',
    '        def handler(input, context):',
    `            return ${body}`,
    '',
  ].join('\n')

t.test('config validate, diff (0/2/1), apply, export', async (t) => {
  const file = join(cli.dir, 'platform.yaml')
  writeFileSync(file, config('"hi"'))
  const withEnv = { env: { GREETING: 'hello' } }

  const valid = await cli.run(['config', 'validate', file], withEnv)
  t.equal(valid.code, 0, valid.stdout + valid.stderr)
  t.match(valid.stdout, 'Valid.')

  const diff = await cli.run(['config', 'diff', file], withEnv)
  t.equal(diff.code, 2, `changes: exit 2 ${diff.stderr}`)
  t.match(diff.stdout, /^ {2}\+ function cfg\/hello$/m)
  t.match(diff.stdout, 'Plan: 1 to create, 0 to update, 0 to delete')
  t.notOk(diff.stdout.includes('\x1b['), 'no colour with NO_COLOR (and no terminal)')

  const json = await cli.run(['config', 'diff', file, '--output', 'json'], withEnv)
  t.equal(json.code, 2)
  const plan = JSON.parse(json.stdout) as { success: boolean; summary: { created: number } }
  t.match(plan, { success: true, summary: { created: 1 } })

  const dry = await cli.run(['config', 'apply', file, '--dry-run'], withEnv)
  t.equal(dry.code, 0)
  t.match(dry.stdout, 'Plan: 1 to create')
  t.equal((await env.request('GET', '/api/v1/functions/cfg/hello')).status, 404, 'a dry run writes nothing')

  const applied = await cli.run(['config', 'apply', file], withEnv)
  t.equal(applied.code, 0, applied.stdout + applied.stderr)
  t.match(applied.stdout, 'Applied: 1 created')
  const fn = await env.request('GET', '/api/v1/functions/cfg/hello')
  t.match(fn.body, { description: 'says hello' }, '${GREETING} came from the command environment')

  const same = await cli.run(['config', 'diff', file], withEnv)
  t.equal(same.code, 0, 'nothing to do: exit 0')
  t.match(same.stdout, 'No changes: 1 unchanged.')

  // from stdin, with a changed body: an update with its field
  const changed = await cli.run(['config', 'diff', '-'], { ...withEnv, stdin: config('"bye"') })
  t.equal(changed.code, 2)
  t.match(changed.stdout, /^ {2}~ function cfg\/hello$/m)
  t.match(
    changed.stdout,
    /^ {6}~ code:\n {10}- {5}return "hi"\n {10}\+ {5}return "bye"$/m,
    'the changed field, line by line',
  )

  // errors: exit 1 with where
  const broken = await cli.run(['config', 'diff', '-'], { stdin: 'apiVersion: platform/v1\nkind: [\n' })
  t.equal(broken.code, 1, 'unreadable YAML: exit 1')
  t.match(broken.stderr, /line \d+/)
  const unset = await cli.run(['config', 'diff', file, '--no-interpolate'])
  t.equal(unset.code, 1, 'a variable the server does not have either: exit 1')
  t.match(unset.stdout + unset.stderr, /GREETING/)

  // a refused apply (a reference to nothing): the result is printed, exit 1, nothing written
  const dangling = [
    'apiVersion: platform/v1',
    'kind: PlatformConfig',
    'metadata:',
    '  name: cli-test',
    'spec:',
    '  agents:',
    '    - namespace: cfg',
    '      name: lost',
    '      system_prompt: hi',
    '      enabled_functions: [cfg/missing]',
    '',
  ].join('\n')
  const refused = await cli.run(['config', 'apply', '-'], { stdin: dangling })
  t.equal(refused.code, 1, 'refused: exit 1')
  t.match(refused.stdout + refused.stderr, /cfg\/missing/, 'naming the missing reference')
  t.equal((await env.request('GET', '/api/v1/agents/cfg/lost')).status, 404, 'nothing written')

  const exported = await cli.run(['config', 'export'])
  t.equal(exported.code, 0, exported.stderr)
  t.match(exported.stdout, /kind: PlatformConfig/)
  t.match(exported.stdout, /name: hello/)
})

const pkg = [
  'apiVersion: platform/v1',
  'kind: PlatformPackage',
  'package:',
  '  name: clipkg',
  '  version: 1.0.0',
  '  description: made by the CLI test',
  'spec:',
  '  variables:',
  '    - name: WORD',
  '      type: text',
  '      required: true',
  '  functions:',
  '    - namespace: pkg',
  '      name: say',
  '      code: |',
  '        def handler(input, context):',
  '            return "${{ variables.WORD }}"',
  '',
].join('\n')

t.test('package preview, install, list, export, create, uninstall', async (t) => {
  const file = join(cli.dir, 'clipkg.yaml')
  writeFileSync(file, pkg)
  const preview = await cli.run(['package', 'preview', file])
  t.match(preview.stdout + preview.stderr, /required|WORD/, 'the missing variable is named')
  const withVar = await cli.run(['package', 'preview', file, '--var', 'WORD=hey'])
  t.equal(withVar.code, 2, `a preview with changes exits 2 ${withVar.stderr}`)
  t.match(withVar.stdout, /\+ function pkg\/say/)

  const values = join(cli.dir, 'values.yaml')
  writeFileSync(values, 'WORD: from-file\n')
  const installed = await cli.run(['package', 'install', file, '--values', values, '--var', 'WORD=hey'])
  t.equal(installed.code, 0, installed.stdout + installed.stderr)
  t.match(installed.stdout, 'Installed clipkg 1.0.0.')
  const run = await cli.run(['run', 'pkg/say'])
  t.equal(run.stdout.trim(), '"hey"', '--var wins over --values')

  const list = await cli.run(['package', 'list'])
  t.match(list.stdout, /^clipkg\t1\.0\.0\tmade by the CLI test$/m)
  const listJson = JSON.parse((await cli.run(['package', 'list', '--output', 'json'])).stdout) as { name: string }[]
  t.ok(listJson.some((p) => p.name === 'clipkg'))
  const exported = await cli.run(['package', 'export', 'clipkg'])
  t.match(exported.stdout, '${{ variables.WORD }}', 'the text as installed')

  const created = await cli.run([
    'package',
    'create',
    '--name',
    'copy',
    '--version',
    '2.0.0',
    '--resource',
    'function:pkg/say',
  ])
  t.equal(created.code, 0, created.stderr)
  t.match(created.stdout, /kind: PlatformPackage/)
  t.match(created.stdout, /name: say/)

  const gone = await cli.run(['package', 'uninstall', 'clipkg'])
  t.equal(gone.code, 0, gone.stderr)
  t.match(gone.stdout, /- function pkg\/say/)
  t.equal((await env.request('GET', '/api/v1/functions/pkg/say')).status, 404, 'its function is gone')
  t.match((await cli.run(['package', 'list'])).stdout, 'No packages installed.')
  const again = await cli.run(['package', 'uninstall', 'clipkg'])
  t.equal(again.code, 1)
  t.match(again.stderr, /404/)
})
