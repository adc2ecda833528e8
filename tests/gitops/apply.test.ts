import t from 'tap'
import { parse } from 'yaml'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { KIND_FIXTURES } from '../fixtures/kinds.ts'

/*
 * Declarative config end to end through HTTP (src/gitops/): export, apply to an empty instance and
 * export again; dry runs; references; resources made by hand; all-or-nothing; concurrent applies;
 * `${VAR}`; documents that cannot be read.
 */
const source = await startTestPlatform(t)
const target = await startTestPlatform(t)

const fx = (kind: string) => structuredClone(KIND_FIXTURES[kind]?.valid ?? {})
const doc = (spec: string) => `apiVersion: platform/v1\nkind: PlatformConfig\nmetadata:\n  name: test\nspec:\n${spec}`

async function created(
  env: TestPlatform,
  path: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const res = await env.request('POST', path, { body })
  if (res.status !== 201) throw new Error(`${path}: ${String(res.status)} ${res.text}`)
  return res.body as Record<string, unknown>
}

const apply = (env: TestPlatform, config: string, extra: Record<string, unknown> = {}) =>
  env.request('POST', '/api/v1/config/apply', { body: { config, dryRun: false, ...extra } })

/** The export without its metadata (which says when it was made). */
async function exported(env: TestPlatform): Promise<{ text: string; spec: Record<string, unknown> }> {
  const res = await env.request('GET', '/api/v1/config/export')
  if (res.status !== 200) throw new Error(`export: ${String(res.status)} ${res.text}`)
  if (!(res.headers.get('content-type') ?? '').startsWith('application/yaml'))
    throw new Error(`export: content-type ${String(res.headers.get('content-type'))}`)
  const parsed = parse(res.text) as { spec: Record<string, unknown> }
  return { text: res.text, spec: parsed.spec }
}

async function populate(env: TestPlatform): Promise<void> {
  await created(env, '/api/v1/secrets', { namespace: 'demo', name: 'token', description: 'crm', value: 'tok-1' })
  await created(env, '/api/v1/connectors', {
    ...fx('connector'),
    namespace: 'demo',
    name: 'crm',
    auth: { type: 'bearer', secret: 'demo/token' },
  })
  await created(env, '/api/v1/functions', {
    ...fx('function'),
    namespace: 'demo',
    name: 'echo',
    // a literal `${...}` in code survives export (written as `$${...}`)
    code: 'def handler(input, context):\n    return {"text": "${not_a_variable}"}\n',
  })
  await created(env, '/api/v1/skills', { ...fx('skill'), namespace: 'demo', name: 'style' })
  await created(env, '/api/v1/stores', { ...fx('store'), namespace: 'demo', name: 'memory' })
  await created(env, '/api/v1/templates', { ...fx('template'), namespace: 'demo', name: 'hello' })
  await created(env, '/api/v1/collections', { ...fx('collection'), namespace: 'demo', name: 'manuals' })
  const provider = await created(env, '/api/v1/llm-providers', { ...fx('llm_provider'), name: 'main' })
  const conn = await created(env, '/api/v1/database-connections', { ...fx('database_connection'), name: 'shop' })
  await created(env, '/api/v1/queries', {
    ...fx('query'),
    namespace: 'demo',
    name: 'orders',
    database_connection_id: conn['id'],
  })
  await created(env, '/api/v1/agents', {
    namespace: 'demo',
    name: 'helper',
    llm_provider_id: provider['id'],
    system_prompt: 'You help with {{ topic }}.',
    enabled_functions: ['demo/echo'],
    enabled_skills: ['demo/style'],
    enabled_queries: ['demo/orders'],
    enabled_collections: ['demo/manuals'],
    enabled_stores: [{ store: 'demo/memory', access: 'readonly' }],
    enabled_connectors: [{ connector: 'demo/crm', operations: ['get_contact'] }],
  })
  await created(env, '/api/v1/components', {
    ...fx('component'),
    namespace: 'demo',
    name: 'board',
    enabled_functions: ['demo/echo'],
    enabled_agents: ['demo/helper'],
    enabled_stores: [{ store: 'demo/memory', access: 'readonly' }],
  })
  await created(env, '/api/v1/manifests', {
    ...fx('manifest'),
    namespace: 'demo',
    name: 'app',
    required_resources: [{ type: 'agent', namespace: 'demo', name: 'helper' }],
    store_dependencies: [{ store: 'demo/memory' }],
  })
}

t.test('round trip: export, apply to an empty instance, export again', async (t) => {
  await populate(source)
  const first = await exported(source)
  t.notMatch(first.text, /tok-1|sk-test-very-secret-value|db-password-never-returned/, 'no secret value is exported')
  t.match(first.text, /\$\$\{not_a_variable\}/, 'a literal ${…} is escaped')
  const secrets = first.spec['secrets'] as Record<string, unknown>[]
  t.same(secrets, [{ namespace: 'demo', name: 'token', description: 'crm' }], 'secrets by name only')

  const byName = (section: string, name: string) =>
    (first.spec[section] as Record<string, unknown>[]).find((r) => r['name'] === name)
  t.match(byName('queries', 'orders'), { database_connection: 'shop' }, 'a query names its connection')
  t.notOk('database_connection_id' in (byName('queries', 'orders') ?? {}), 'not by its id')
  t.match(byName('agents', 'helper'), { llm_provider: 'main' }, 'an agent names its provider')

  const applied = await apply(target, first.text)
  t.equal(applied.status, 200, applied.text)
  const result = applied.body as { success: boolean; summary: Record<string, number>; warnings: string[] }
  t.equal(result.success, true)
  t.equal(result.summary['created'], 13, 'every resource but the bootstrap agent')
  t.match(result.warnings.join('\n'), /agent default\/default exists and is not managed by config/)

  const second = await exported(target)
  t.same(second.spec, first.spec, 'the same document, secret values aside')
  const fn = await target.request('GET', '/api/v1/functions/demo/echo')
  t.match((fn.body as { code: string }).code, /"\$\{not_a_variable\}"/, 'the literal arrived as written')
  const managed = await target.request('GET', '/api/v1/agents/demo/helper')
  t.equal((managed.body as { managed_by: string }).managed_by, 'config')
  const [conn] = await target.sql<{ id: string }>(
    `select id::text as id from resources where kind = 'database_connection' and name = 'shop'`,
  )
  t.match(
    (await target.request('GET', '/api/v1/queries/demo/orders')).body,
    {
      database_connection_id: conn?.id,
    },
    "the query points at this installation's connection",
  )

  const again = await apply(target, second.text)
  t.equal(again.status, 200, again.text)
  t.match(
    again.body,
    { success: true, summary: { created: 0, updated: 0, deleted: 0 } },
    'a second apply changes nothing',
  )
})

t.test('dry run writes nothing and answers the plan', async (t) => {
  const config = doc('  skills:\n    - namespace: dry\n      name: one\n      content: hi\n')
  const res = await apply(target, config, { dryRun: true })
  t.equal(res.status, 200, res.text)
  t.match(res.body, {
    success: true,
    summary: { created: 1 },
    changes: [{ action: 'created', resourceType: 'skill', resourceName: 'dry/one' }],
  })
  t.equal((await target.request('GET', '/api/v1/skills/dry/one')).status, 404, 'not created')
})

t.test('a dangling reference is refused and nothing is applied', async (t) => {
  const config = doc(
    '  skills:\n    - namespace: dang\n      name: s\n      content: x\n  agents:\n    - namespace: dang\n      name: a\n      enabled_functions: [dang/missing]\n',
  )
  const res = await apply(target, config)
  t.equal(res.status, 422, res.text)
  t.match(res.body, { success: false, code: 'config.dangling_reference' })
  t.match(res.text, /function dang\/missing/)
  t.equal((await target.request('GET', '/api/v1/skills/dang/s')).status, 404, 'nothing applied')
  const v = await target.request('POST', '/api/v1/config/validate', { body: { config } })
  t.equal(v.status, 200)
  t.match(v.body, { valid: false, code: 'config.dangling_reference', errors: [{ line: Number, column: Number }] })
})

t.test('a resource made by hand is left alone (warning) unless forced', async (t) => {
  await created(target, '/api/v1/skills', { namespace: 'hand', name: 'made', content: 'by hand' })
  const config = doc('  skills:\n    - namespace: hand\n      name: made\n      content: from config\n')
  const res = await apply(target, config)
  t.equal(res.status, 200, res.text)
  t.match(res.body, { success: true, summary: { unchanged: 1, updated: 0 } })
  t.match((res.body as { warnings: string[] }).warnings[0], /skill hand\/made exists and is not managed by config/)
  t.match((await target.request('GET', '/api/v1/skills/hand/made')).body, { content: 'by hand', managed_by: null })
  const forced = await apply(target, config, { force: true })
  t.match(forced.body, { success: true, summary: { updated: 1 } })
  t.match((await target.request('GET', '/api/v1/skills/hand/made')).body, {
    content: 'from config',
    managed_by: 'config',
  })
})

t.test('a failing item in the middle rolls the whole apply back', async (t) => {
  // the collection's metadata_schema is not a usable JSON Schema: its kind's validate refuses it
  const config = doc(
    '  skills:\n    - namespace: rb\n      name: first\n      content: x\n  collections:\n    - namespace: rb\n      name: bad\n      metadata_schema: {type: 12}\n  templates:\n    - namespace: rb\n      name: last\n      html_content: hi\n',
  )
  const res = await apply(target, config)
  t.equal(res.status, 422, res.text)
  t.match(res.body, { success: false, errors: [{ path: /spec\.collections\[0\]/ }] })
  t.equal((await target.request('GET', '/api/v1/skills/rb/first')).status, 404, 'the first item rolled back')
})

t.test('two concurrent applies do not interleave', async (t) => {
  const items = (tag: string) =>
    Array.from(
      { length: 30 },
      (_, i) => `    - namespace: conc\n      name: s${String(i)}\n      content: ${tag}\n`,
    ).join('')
  const [a, b] = await Promise.all([
    apply(target, doc(`  skills:\n${items('A')}`)),
    apply(target, doc(`  skills:\n${items('B')}`)),
  ])
  t.equal(a.status, 200, a.text)
  t.equal(b.status, 200, b.text)
  const rows = await target.sql<{ content: string }>(
    `select spec->>'content' as content from resources where kind = 'skill' and namespace = 'conc'`,
  )
  t.equal(rows.length, 30)
  t.equal(new Set(rows.map((r) => r.content)).size, 1, 'all from one apply: the later one, whole')
  const sums = [a.body, b.body].map((r) => (r as { summary: { created: number } }).summary.created).sort()
  t.same(sums, [0, 30], 'the second saw the first committed')
})

t.test('${VAR}: a missing variable is named', async (t) => {
  const config = doc('  skills:\n    - namespace: env\n      name: s\n      content: ${SURELY_NOT_SET_VAR}\n')
  const res = await apply(target, config)
  t.equal(res.status, 422, res.text)
  t.match(res.body, { code: 'config.missing_variable', detail: /SURELY_NOT_SET_VAR/ })
  const v = await target.request('POST', '/api/v1/config/validate', { body: { config } })
  t.match(v.body, { valid: false, code: 'config.missing_variable' })
})

t.test('documents that cannot be read: 4xx with line and column, nothing written', async (t) => {
  const bad = await target.request('POST', '/api/v1/config/validate', {
    body: { config: 'apiVersion: platform/v1\nkind: PlatformConfig\nspec:\n  skills: [\n' },
  })
  t.equal(bad.status, 422, bad.text)
  t.match(bad.body, { code: 'config.invalid_yaml', errors: [{ line: Number, column: Number }] })
  const badApply = await apply(target, 'spec: {a: 1\n')
  t.equal(badApply.status, 422)

  const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]']
  for (let i = 1; i < 9; i++)
    bomb.push(
      `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
        .fill(`*${String.fromCharCode(96 + i)}`)
        .join(', ')}]`,
    )
  const aliases = await apply(target, bomb.join('\n'))
  t.equal(aliases.status, 422, aliases.text)
  t.match(aliases.body, { code: 'config.too_many_aliases' })

  const deep = await apply(target, `${'['.repeat(5000)}${']'.repeat(5000)}`)
  t.equal(deep.status, 422)
  t.match(deep.body, { code: 'config.too_deep' })

  // above CONFIG_MAX_BYTES (5 MiB) but within what the gateway takes for a document: the handler's 413
  const over = await apply(target, `# ${'x'.repeat(5.5 * 1024 * 1024)}\n`)
  t.equal(over.status, 413, over.text.slice(0, 200))
  t.match(over.body, { code: 'config.too_large' })

  const huge = await apply(target, `# ${'x'.repeat(50 * 1024 * 1024)}\n`)
  t.equal(huge.status, 413, 'a 50 MB document is too large')
  const rows = await target.sql(`select 1 from resources where namespace in ('env')`)
  t.equal(rows.length, 0)
})

t.test('a document larger than HTTP_MAX_BODY_BYTES is taken (up to CONFIG_MAX_BYTES)', async (t) => {
  const content = 'y'.repeat(60_000)
  const items = Array.from(
    { length: 12 },
    (_, i) => `    - namespace: big\n      name: s${String(i)}\n      content: ${content}\n`,
  ).join('')
  const config = doc(`  skills:\n${items}`)
  t.ok(config.length > target.config.HTTP_MAX_BODY_BYTES, 'over the JSON body limit')
  const res = await apply(target, config)
  t.equal(res.status, 200, res.text.slice(0, 300))
  t.match(res.body, { success: true, summary: { created: 12 } })
})

t.test('export and apply are admin only', async (t) => {
  const user = await target.createUser('config-user@example.com')
  for (const [method, path] of [
    ['GET', '/api/v1/config/export'],
    ['POST', '/api/v1/config/apply'],
    ['POST', '/api/v1/config/validate'],
  ] as const) {
    const res = await target.request(method, path, {
      token: user.token,
      ...(method === 'POST' ? { body: { config: doc('  skills: []\n') } } : {}),
    })
    t.equal(res.status, 403, `${method} ${path}`)
  }
})
