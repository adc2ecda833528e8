import t from 'tap'
import { planChanges, type CurrentResource, type DesiredResource } from '../../src/gitops/plan.ts'
import { renderPlanJson } from '../../src/gitops/render-plan-json.ts'
import { renderPlanText } from '../../src/gitops/render-plan-text.ts'

/* The plan of an apply: every action, field-level changes with secrets masked, the summary and both renderers. */

const desired: DesiredResource[] = [
  { kind: 'agent', key: 'default/new', body: { name: 'new', model: 'gpt-4o', tools: ['a'] } },
  {
    kind: 'function',
    key: 'default/changed',
    body: { name: 'changed', code: 'print(2)', timeout: 30, env: { A: '1', C: '3' }, tags: ['x'] },
  },
  { kind: 'skill', key: 'default/same', body: { name: 'same', content: 'x' } },
  { kind: 'skill', key: 'default/by-checksum', body: { name: 'by-checksum', content: 'ignored' }, checksum: 'c1' },
  { kind: 'agent', key: 'default/manual', body: { name: 'manual', model: 'b' } },
  { kind: 'secret', key: 'default/token', body: { name: 'token', value: 'new-value' } },
  { kind: 'secret', key: 'default/fresh', body: { name: 'fresh', value: 'fresh-value' } },
]

const current: CurrentResource[] = [
  {
    kind: 'function',
    key: 'default/changed',
    body: { name: 'changed', code: 'print(1)', memory: 256, env: { A: '1', B: '2' }, tags: ['x', 'y'] },
    managedBy: 'config',
  },
  { kind: 'skill', key: 'default/same', body: { content: 'x', name: 'same' }, managedBy: 'config' },
  {
    kind: 'skill',
    key: 'default/by-checksum',
    body: { name: 'by-checksum', content: 'other' },
    managedBy: 'config',
    checksum: 'c1',
  },
  { kind: 'agent', key: 'default/manual', body: { name: 'manual', model: 'a' }, managedBy: null },
  { kind: 'secret', key: 'default/token', body: { name: 'token', value: 'old-value' }, managedBy: 'config' },
  { kind: 'query', key: 'default/gone', body: { name: 'gone' }, managedBy: 'config' },
  { kind: 'query', key: 'default/pkg-owned', body: { name: 'pkg-owned' }, managedBy: 'pkg:crm' },
  { kind: 'query', key: 'default/handmade', body: { name: 'handmade' }, managedBy: null },
]

const secretFields = (kind: string) => (kind === 'secret' ? ['value'] : [])

t.test('every action', async (t) => {
  const plan = planChanges({ desired, current, owner: 'config', secretFields })
  t.same(
    plan.changes.map((c) => [c.action, c.kind, c.key]),
    [
      ['create', 'agent', 'default/new'],
      ['update', 'function', 'default/changed'],
      ['unchanged', 'skill', 'default/same'],
      ['unchanged', 'skill', 'default/by-checksum'],
      ['conflict', 'agent', 'default/manual'],
      ['update', 'secret', 'default/token'],
      ['create', 'secret', 'default/fresh'],
      ['delete', 'query', 'default/gone'],
    ],
    "another owner's resources and handmade ones are never deleted",
  )
  t.same(plan.summary, { created: 2, updated: 2, unchanged: 3, deleted: 1 }, 'a conflict counts as unchanged')
  t.same(plan.warnings, [
    'agent default/manual exists and is not managed by config (it was created through the API); left as it is (apply with force to take it over)',
  ])
  t.same(plan.changes[1]?.fields, [
    { path: 'code', change: 'changed', before: 'print(1)', after: 'print(2)' },
    { path: 'env.B', change: 'removed', before: '2' },
    { path: 'env.C', change: 'added', after: '3' },
    { path: 'memory', change: 'removed', before: 256 },
    { path: 'tags[1]', change: 'removed', before: 'y' },
    { path: 'timeout', change: 'added', after: 30 },
  ])
  t.same(
    plan.changes[0]?.fields,
    [
      { path: 'model', change: 'added', after: 'gpt-4o' },
      { path: 'name', change: 'added', after: 'new' },
      { path: 'tools', change: 'added', after: ['a'] },
    ],
    'a creation lists what it sets',
  )
})

t.test('secrets are compared, never shown', async (t) => {
  const plan = planChanges({ desired, current, owner: 'config', secretFields })
  t.same(plan.changes[5]?.fields, [{ path: 'value', change: 'changed', before: '(secret)', after: '(secret)' }])
  t.same(plan.changes[6]?.fields, [
    { path: 'name', change: 'added', after: 'fresh' },
    { path: 'value', change: 'added', after: '(secret)' },
  ])
  const same = planChanges({
    desired: [{ kind: 'secret', key: 'default/token', body: { name: 'token', value: 'v' } }],
    current: [{ kind: 'secret', key: 'default/token', body: { name: 'token', value: 'v' }, managedBy: 'config' }],
    owner: 'config',
    secretFields,
  })
  t.equal(same.changes[0]?.action, 'unchanged')
  const everything = JSON.stringify(plan) + renderPlanText(plan) + JSON.stringify(renderPlanJson(plan))
  for (const value of ['new-value', 'old-value', 'fresh-value'])
    t.notOk(everything.includes(value), `${value} never appears`)
})

t.test('force takes over a resource managed by someone else', async (t) => {
  const plan = planChanges({ desired, current, owner: 'config', force: true, secretFields })
  t.same(plan.changes[4], {
    kind: 'agent',
    key: 'default/manual',
    action: 'update',
    fields: [
      { path: 'managed_by', change: 'changed', before: null, after: 'config' },
      { path: 'model', change: 'changed', before: 'a', after: 'b' },
    ],
  })
  const equal = planChanges({
    desired: [{ kind: 'skill', key: 'default/s', body: { name: 's' } }],
    current: [{ kind: 'skill', key: 'default/s', body: { name: 's' }, managedBy: 'pkg:crm' }],
    owner: 'config',
    force: true,
  })
  t.same(equal.changes[0]?.action, 'update', 'taking over is a change even when the fields are equal')
  const pkg = planChanges({ desired: [], current, owner: 'pkg:crm' })
  t.same(
    pkg.changes.map((c) => [c.action, c.key]),
    [['delete', 'default/pkg-owned']],
    "a package's plan deletes only its own",
  )
})

t.test('the text renderer', async (t) => {
  const plan = planChanges({ desired, current, owner: 'config', secretFields })
  t.equal(
    renderPlanText(plan),
    `  + agent default/new
      + model = "gpt-4o"
      + name = "new"
      + tools = ["a"]
  ~ function default/changed
      ~ code: "print(1)" → "print(2)"
      - env.B = "2"
      + env.C = "3"
      - memory = 256
      - tags[1] = "y"
      + timeout = 30
  = skill default/same
  = skill default/by-checksum
  ! agent default/manual: exists and is not managed by config (it was created through the API); left as it is (apply with force to take it over)
  ~ secret default/token
      ~ value: "(secret)" → "(secret)"
  + secret default/fresh
      + name = "fresh"
      + value = "(secret)"
  - query default/gone

Plan: 2 to create, 2 to update, 1 to delete, 3 unchanged.
`,
  )
  const quiet = renderPlanText(plan, { showUnchanged: false })
  t.notMatch(quiet, /= skill/, 'unchanged resources can be left out')
  const colored = renderPlanText(plan, { color: true })
  t.match(colored, '\x1b[32m  + agent default/new\x1b[0m', 'creations in green')
  t.match(colored, '\x1b[31m  - query default/gone\x1b[0m', 'deletions in red')
  t.match(colored, '\x1b[33m  ~ function default/changed\x1b[0m', 'updates in yellow')
  t.notOk(renderPlanText(plan).includes('\x1b'), 'no colour unless asked')
  t.equal(renderPlanText(planChanges({ desired: [], current: [], owner: 'config' })), '\nNo changes: 0 unchanged.\n')
  const long = planChanges({
    desired: [{ kind: 'skill', key: 'default/l', body: { content: 'x'.repeat(500), prompt: 'a\nb\nc' } }],
    current: [],
    owner: 'config',
  })
  t.match(renderPlanText(long), /\+ content = "x{58}…\n/, 'a long value is cut')
  t.match(renderPlanText(long), /\+ prompt = \(3 lines\)\n/, 'text of several lines says how many')
})

t.test('the JSON renderer', async (t) => {
  const json = renderPlanJson(planChanges({ desired, current, owner: 'config', secretFields }))
  t.same(json.summary, { created: 2, updated: 2, unchanged: 3, deleted: 1 })
  t.match(json.changes[4], {
    action: 'conflict',
    resourceType: 'agent',
    resourceName: 'default/manual',
    warning: /force/,
  })
  t.same(json.changes[7], { action: 'delete', resourceType: 'query', resourceName: 'default/gone', fields: [] })
  t.equal(json.warnings.length, 1)
})
