import { readFileSync } from 'node:fs'
import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Packages on a real platform (src/gitops/package-*.ts): install with a variable of every type,
 * preview, upgrade in place, uninstall keeping a detached item, the refusals (forbidden sections,
 * a second package taking the first's item, a missing variable, a non-admin), the secret masked in
 * the record and absent from the export, and create → install on a fresh platform.
 */
// a small CONFIG_MAX_BYTES, so that a text over it is cheap to send
const env = await startTestPlatform(t, { CONFIG_MAX_BYTES: '200000' })

const code = (body: unknown) => (body as { code?: unknown } | undefined)?.code
const detail = (body: unknown) => String((body as { detail?: unknown } | undefined)?.detail)

const SECRET = 's3cr3t-never-shown-anywhere'

const weather = (version: string, extra = '') => `apiVersion: platform/v1
kind: PlatformPackage
package:
  name: weather
  version: ${version}
  description: Weather tools
  author: Tests
spec:
  variables:
    - name: GREETING
      type: text
      pattern: '^[A-Za-z ]+$'
      required: true
    - name: VERBOSE
      type: boolean
      default: false
    - name: UNITS
      type: enum
      choices: [metric, imperial]
      default: metric
    - name: PROVIDER
      type: resource_ref
      resource: llm_providers
      required: true
    - name: API_KEY
      type: secret
      required: true
  skills:
    - namespace: weather
      name: style
      description: \${{ variables.GREETING }}
      content: "units \${{ variables.UNITS }}, verbose \${{ variables.VERBOSE }}, provider \${{ variables.PROVIDER }}"
  functions:
    - namespace: weather
      name: forecast
      code: |
        def handler(input, context):
            return {"ok": True}
${extra}`

const extraSkill = `    - namespace: weather
      name: extra
      content: dropped by version 2
`
const v1 = weather('1.0.0').replace('  functions:', `${extraSkill}  functions:`)

const values = { GREETING: 'Hello there', VERBOSE: true, UNITS: 'imperial', PROVIDER: 'main', API_KEY: SECRET }

async function ok(e: TestPlatform, method: string, path: string, body?: unknown) {
  const res = await e.request(method, path, body === undefined ? {} : { body })
  if (res.status >= 300) throw new Error(`${method} ${path}: ${String(res.status)} ${res.text}`)
  return res.body as Record<string, unknown>
}

// the provider a resource_ref variable names (an administrator's item, never a package's)
await ok(env, 'POST', '/api/v1/llm-providers', {
  name: 'main',
  provider_type: 'openai',
  api_key: 'sk-test',
  api_endpoint: 'https://llm.example.com/v1',
  default_model: 'gpt-test',
})

t.test('preview writes nothing and says what input is still needed', async (t) => {
  const bare = await ok(env, 'POST', '/api/v1/packages/preview', { source: v1 })
  t.equal(bare['requires_input'], true)
  t.same(
    (bare['variables'] as { name: string }[]).map((v) => v.name),
    ['GREETING', 'VERBOSE', 'UNITS', 'PROVIDER', 'API_KEY'],
  )
  t.equal(bare['success'], false)
  const full = await ok(env, 'POST', '/api/v1/packages/preview', { source: v1, variables: values })
  t.equal(full['requires_input'], false)
  t.equal(full['success'], true, JSON.stringify(full['errors']))
  t.match(full['summary'], { created: 4 })
  t.same((await ok(env, 'GET', '/api/v1/packages')) as unknown, [])
  t.equal((await env.request('GET', '/api/v1/skills/weather/style')).status, 404)
  t.equal((await env.request('GET', '/api/v1/secrets/default/api_key')).status, 404)
})

t.test('a required variable missing is refused naming it', async (t) => {
  const { API_KEY: _k, ...rest } = values
  const res = await env.request('POST', '/api/v1/packages/install', { body: { source: v1, variables: rest } })
  t.equal(res.status, 422)
  t.equal(code(res.body), 'package.variable_required')
  t.match(detail(res.body), /API_KEY/)
  const bad = await env.request('POST', '/api/v1/packages/install', {
    body: { source: v1, variables: { ...values, PROVIDER: 'nope' } },
  })
  t.equal(bad.status, 422)
  t.match(detail(bad.body), /PROVIDER/)
})

t.test('install with a variable of every type, then upgrade and uninstall', async (t) => {
  const res = await ok(env, 'POST', '/api/v1/packages/install', { source: v1, variables: values })
  t.match(res['package'], { name: 'weather', version: '1.0.0', author: 'Tests' })
  t.match(res['apply'], { success: true, summary: { created: 4 } })
  const skill = await ok(env, 'GET', '/api/v1/skills/weather/style')
  t.equal(skill['description'], 'Hello there')
  t.equal(skill['content'], 'units imperial, verbose true, provider main')
  t.equal(skill['managed_by'], 'pkg:weather')
  const secret = await ok(env, 'GET', '/api/v1/secrets/default/api_key')
  t.equal(secret['has_value'], true)
  t.equal(secret['managed_by'], 'pkg:weather')

  // the record keeps the values, the secret as the mask; the export is the text as given
  const record = await ok(env, 'GET', '/api/v1/packages/weather')
  t.same((record['resources'] as { type: string; name: string }[]).map((r) => `${r.type} ${r.name}`).sort(), [
    'function weather/forecast',
    'secret default/api_key',
    'skill weather/extra',
    'skill weather/style',
  ])
  t.same(record['values'], {
    GREETING: 'Hello there',
    VERBOSE: 'true',
    UNITS: 'imperial',
    PROVIDER: 'main',
    API_KEY: '***',
  })
  const [stored] = await env.sql<{ values: unknown; source: string }>(
    `select "values", source from packages where name = 'weather'`,
  )
  t.notMatch(JSON.stringify(stored), SECRET)
  const exported = await env.request('GET', '/api/v1/packages/weather/export')
  t.equal(exported.status, 200)
  t.match(exported.headers.get('content-type'), /^application\/yaml/)
  t.equal(exported.text, v1)
  t.notMatch(exported.text, SECRET)
  t.match(await ok(env, 'GET', '/api/v1/packages'), [{ name: 'weather', version: '1.0.0' }])

  // version 2 drops the extra skill; the secret is not asked again
  const { API_KEY: _k, ...withoutSecret } = values
  const v2 = weather('2.0.0')
  const up = await ok(env, 'POST', '/api/v1/packages/install', {
    source: v2,
    variables: { ...withoutSecret, GREETING: 'Hi again' },
  })
  t.match(up['package'], { version: '2.0.0' })
  t.match(up['apply'], { success: true, summary: { deleted: 1 } })
  t.equal((await env.request('GET', '/api/v1/skills/weather/extra')).status, 404)
  t.equal((await ok(env, 'GET', '/api/v1/skills/weather/style'))['description'], 'Hi again')
  t.equal((await ok(env, 'GET', '/api/v1/packages/weather'))['values'] !== undefined, true)
  const [ids] = await env.sql<{ n: string }>(`select count(*)::text as n from packages`)
  t.equal(ids?.n, '1', 'upgraded in place')

  // an edit detaches the function: uninstall keeps it, removes the rest, then the record
  const edited = await env.request('PUT', '/api/v1/functions/weather/forecast', {
    body: { code: 'def handler(input, context):\n    return {"ok": False}\n' },
  })
  t.equal(edited.status, 200, edited.text)
  t.equal((edited.body as { managed_by?: unknown }).managed_by, null)
  const gone = await ok(env, 'DELETE', '/api/v1/packages/weather')
  t.match(gone, { package: 'weather', apply: { success: true } })
  t.equal((await env.request('GET', '/api/v1/skills/weather/style')).status, 404)
  t.equal((await env.request('GET', '/api/v1/secrets/default/api_key')).status, 404)
  t.equal((await env.request('GET', '/api/v1/functions/weather/forecast')).status, 200, 'the detached item stays')
  t.equal((await env.request('GET', '/api/v1/packages/weather')).status, 404)
  t.equal((await env.request('DELETE', '/api/v1/packages/weather')).status, 404)
})

t.test('a secret variable never takes the value of a secret the package does not keep', async (t) => {
  await ok(env, 'POST', '/api/v1/secrets', { namespace: 'default', name: 'stolen', value: SECRET })
  const thief = `apiVersion: platform/v1
kind: PlatformPackage
package: {name: thief, version: '1'}
spec:
  variables:
    - {name: STOLEN, type: secret, required: true}
  skills:
    - {namespace: thief, name: loot, content: '\${{ variables.STOLEN }}'}
`
  const res = await env.request('POST', '/api/v1/packages/install', { body: { source: thief } })
  t.equal(res.status, 422)
  t.equal(code(res.body), 'package.variable_required')
  t.equal((await env.request('GET', '/api/v1/skills/thief/loot')).status, 404)
})

t.test('forbidden sections are refused', async (t) => {
  const text = `apiVersion: platform/v1
kind: PlatformPackage
package: {name: sneaky, version: '1'}
spec:
  roles:
    - name: Owners
      permissions: ['platform.*:all']
  llmProviders:
    - name: evil
      provider_type: openai
`
  for (const path of ['/api/v1/packages/install', '/api/v1/packages/preview']) {
    const res = await env.request('POST', path, { body: { source: text } })
    if (path.endsWith('install')) {
      t.equal(res.status, 422)
      t.equal(code(res.body), 'package.forbidden_section')
      t.match(detail(res.body), /roles/)
      t.match(detail(res.body), /llmProviders/)
    } else t.match(res.body, { success: false, errors: [{ path: 'spec.roles' }, { path: 'spec.llmProviders' }] })
  }
  t.same(await env.sql(`select 1 from roles where name = 'Owners'`), [])
  const broken = await env.request('POST', '/api/v1/packages/preview', { body: { source: 'spec: [unclosed' } })
  t.equal(broken.status, 422)
  t.equal(code(broken.body), 'config.invalid_yaml')
  const invalidFunction = `apiVersion: platform/v1
kind: PlatformPackage
package: {name: wrong, version: '1'}
spec:
  functions:
    - namespace: wrong
      name: f
      code: 42
`
  const refused = await env.request('POST', '/api/v1/packages/install', { body: { source: invalidFunction } })
  t.equal(refused.status, 422)
  t.equal(code(refused.body), 'config.invalid_document')
  t.match(refused.body, { errors: [{ path: 'spec.functions[0].code', line: 8 }] })
  t.match(await ok(env, 'POST', '/api/v1/packages/preview', { source: invalidFunction }), {
    success: false,
    errors: [{ path: 'spec.functions[0].code', line: 8 }],
  })
  t.equal((await env.request('GET', '/api/v1/functions/wrong/f')).status, 404)
  const large = `${v1}\n# ${'x'.repeat(210_000)}\n`
  for (const path of ['/api/v1/packages/install', '/api/v1/packages/preview']) {
    const res = await env.request('POST', path, { body: { source: large, variables: values } })
    t.equal(res.status, 413, path)
    t.equal(code(res.body), 'config.too_large')
  }
})

t.test("a package may not overwrite another package's item", async (t) => {
  const first = `apiVersion: platform/v1
kind: PlatformPackage
package: {name: first, version: '1'}
spec:
  skills:
    - {namespace: shared, name: tips, content: first}
`
  await ok(env, 'POST', '/api/v1/packages/install', { source: first })
  const res = await env.request('POST', '/api/v1/packages/install', {
    body: { source: first.replace('name: first', 'name: second').replace('content: first', 'content: second') },
  })
  t.equal(res.status, 409)
  t.equal(code(res.body), 'package.conflict')
  t.match(detail(res.body), /second/)
  t.match(detail(res.body), /first/)
  t.equal((await ok(env, 'GET', '/api/v1/skills/shared/tips'))['content'], 'first')
  t.equal((await env.request('GET', '/api/v1/packages/second')).status, 404)
  await ok(env, 'DELETE', '/api/v1/packages/first')
})

t.test('create from existing resources, then install on a fresh platform', async (t) => {
  await ok(env, 'POST', '/api/v1/secrets', { namespace: 'default', name: 'crm_token', value: SECRET })
  await ok(env, 'POST', '/api/v1/skills', { namespace: 'kit', name: 'guide', content: '# Guide' })
  await ok(env, 'POST', '/api/v1/connectors', {
    namespace: 'kit',
    name: 'crm',
    base_url: 'https://crm.example.com/v1',
    auth: { type: 'bearer', secret: 'default/crm_token' },
    operations: [],
  })
  const [main] = await env.sql<{ id: string }>(`select id from resources where kind = 'llm_provider' and name = 'main'`)
  await ok(env, 'POST', '/api/v1/agents', {
    namespace: 'kit',
    name: 'helper',
    llm_provider_id: main?.id,
    system_prompt: 'You help.',
    enabled_skills: ['kit/guide'],
  })
  const made = await ok(env, 'POST', '/api/v1/packages/create', {
    name: 'kit',
    version: '0.1.0',
    description: 'a kit',
    resources: [
      { type: 'skill', namespace: 'kit', name: 'guide' },
      { type: 'connector', namespace: 'kit', name: 'crm' },
      { type: 'agent', namespace: 'kit', name: 'helper' },
    ],
  })
  const yaml = String(made['yaml'])
  t.notMatch(yaml, SECRET)
  t.match(yaml, /kind: PlatformPackage/)
  t.match(yaml, /CRM_TOKEN/)
  t.match(yaml, /llm_provider: \$\{\{ variables\.LLM_PROVIDER_MAIN \}\}/)
  const missing = await env.request('GET', '/api/v1/skills/kit/nothing')
  t.equal(missing.status, 404)
  t.equal(
    (
      await env.request('POST', '/api/v1/packages/create', {
        body: { name: 'x', version: '1', resources: [{ type: 'skill', namespace: 'kit', name: 'nothing' }] },
      })
    ).status,
    404,
  )
  t.equal(
    (
      await env.request('POST', '/api/v1/packages/create', {
        body: { name: 'x', version: '1', resources: [{ type: 'llm_provider', name: 'main' }] },
      })
    ).status,
    422,
  )

  const fresh = await startTestPlatform(t)
  const other = await ok(fresh, 'POST', '/api/v1/llm-providers', {
    name: 'other',
    provider_type: 'openai',
    api_key: 'sk-test',
    api_endpoint: 'https://llm.example.com/v1',
    default_model: 'gpt-test',
  })
  const preview = await ok(fresh, 'POST', '/api/v1/packages/preview', { source: yaml })
  t.equal(preview['requires_input'], true)
  const installed = await ok(fresh, 'POST', '/api/v1/packages/install', {
    source: yaml,
    variables: { CRM_TOKEN: 'another-token', LLM_PROVIDER_MAIN: 'other' },
  })
  t.match(installed['apply'], { success: true })
  t.equal((await ok(fresh, 'GET', '/api/v1/skills/kit/guide'))['content'], '# Guide')
  t.match(await ok(fresh, 'GET', '/api/v1/connectors/kit/crm'), { auth: { secret: 'default/crm_token' } })
  t.equal((await ok(fresh, 'GET', '/api/v1/secrets/default/crm_token'))['has_value'], true)
  t.match(await ok(fresh, 'GET', '/api/v1/agents/kit/helper'), {
    llm_provider_id: other['id'],
    enabled_skills: ['kit/guide'],
  })
})

t.test(
  'the example of docs/gitops.md installs; its dependencies are recorded; a role reference is checked',
  async (t) => {
    const page = readFileSync(new URL('../../docs/gitops.md', import.meta.url), 'utf8')
    const example = /### Example\n\n```yaml\n([\s\S]*?)```/.exec(page)?.[1]
    if (example === undefined) throw new Error('no example in docs/gitops.md')
    await ok(env, 'POST', '/api/v1/collections', { namespace: 'kb', name: 'climate', description: 'climate' })
    const variables = { GREETING: 'Hello there', KNOWLEDGE: 'kb/climate', WEATHER_TOKEN: 't0k3n' }
    const preview = await ok(env, 'POST', '/api/v1/packages/preview', { source: example, variables })
    t.match(preview, { success: true, requires_input: false }, JSON.stringify(preview['errors']))
    const res = await ok(env, 'POST', '/api/v1/packages/install', { source: example, variables })
    t.match(res['package'], { name: 'weather', dependencies: [{ package_name: 'python-dateutil', version: '>=2.8' }] })
    t.match(await env.sql(`select status, managed_by from dependencies where package_name = 'python-dateutil'`), [
      { status: 'approved', managed_by: 'pkg:weather' },
    ])
    t.match(await ok(env, 'GET', '/api/v1/agents/weather/forecaster'), { enabled_collections: ['kb/climate'] })
    await ok(env, 'DELETE', '/api/v1/packages/weather')
    t.same(await env.sql(`select 1 from dependencies where package_name = 'python-dateutil'`), [])

    const withRole = (role: string) => `apiVersion: platform/v1
kind: PlatformPackage
package: {name: roled, version: '1'}
spec:
  variables:
    - {name: ROLE, type: resource_ref, resource: roles, default: ${role}}
  skills:
    - {namespace: roled, name: note, content: 'for \${{ variables.ROLE }}'}
`
    const missing = await env.request('POST', '/api/v1/packages/install', { body: { source: withRole('Nobody') } })
    t.equal(missing.status, 422)
    t.equal(code(missing.body), 'package.variable_invalid')
    t.match(detail(missing.body), /ROLE/)
    await ok(env, 'POST', '/api/v1/packages/install', { source: withRole('Users') })
    t.equal((await ok(env, 'GET', '/api/v1/skills/roled/note'))['content'], 'for Users')
    await ok(env, 'DELETE', '/api/v1/packages/roled')
  },
)

t.test('every package route is an administrator’s', async (t) => {
  const user = await env.createUser('someone@test.local')
  const calls: [string, string, unknown?][] = [
    ['POST', '/api/v1/packages/preview', { source: v1 }],
    ['POST', '/api/v1/packages/install', { source: v1, variables: values }],
    ['POST', '/api/v1/packages/create', { name: 'x', version: '1', resources: [{ type: 'skill', name: 'a' }] }],
    ['GET', '/api/v1/packages'],
    ['GET', '/api/v1/packages/weather'],
    ['DELETE', '/api/v1/packages/weather'],
    ['GET', '/api/v1/packages/weather/export'],
  ]
  for (const [method, path, body] of calls) {
    const res = await env.request(method, path, { token: user.token, ...(body === undefined ? {} : { body }) })
    t.equal(res.status, 403, `${method} ${path}`)
  }
})
