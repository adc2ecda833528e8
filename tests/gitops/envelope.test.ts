import t from 'tap'
import { validateConfigDocument } from '../../src/gitops/config-schema.ts'
import { documentResources } from '../../src/gitops/document-resources.ts'
import { PACKAGE_SECTIONS, validatePackageDocument } from '../../src/gitops/package-schema.ts'
import { parseYamlDocument } from '../../src/gitops/parse-document.ts'
import { sectionKinds } from '../../src/gitops/section-kinds.ts'
import { caught, LIMITS } from './caught.ts'

/* The envelopes of configs and packages: their shape, unknown keys named with where they are, the sections a package may not hold. */

const config = (spec: string) =>
  `apiVersion: platform/v1\nkind: PlatformConfig\nmetadata:\n  name: prod\nspec:\n${spec}`

t.test('a config with every section', async (t) => {
  const spec = Object.keys(sectionKinds)
    .map((s) => `  ${s}: []`)
    .join('\n')
  const doc = parseYamlDocument(config(`${spec}\n`), LIMITS)
  const value = validateConfigDocument(doc)
  t.equal(value.kind, 'PlatformConfig')
  t.same(Object.keys(value.spec), Object.keys(sectionKinds))
  t.same(validateConfigDocument(parseYamlDocument(config('  {}\n'), LIMITS)).spec, {}, 'every section is optional')
})

t.test('the section -> kind mapping', async (t) => {
  t.match(sectionKinds, {
    agents: 'agent',
    llmProviders: 'llm_provider',
    databaseConnections: 'database_connection',
    databaseTriggers: 'database_trigger',
    webhooks: 'webhook',
    schedules: 'schedule',
    roles: 'role',
    users: 'user',
    secrets: 'secret',
    dependencies: 'dependency',
  })
})

t.test('unknown keys are named, with the known ones, line and column', async (t) => {
  const doc = parseYamlDocument(config('  agentz: []\n  agents: []\n'), LIMITS)
  const e = caught(() => validateConfigDocument(doc))
  t.equal(e.code, 'config.unknown_key')
  t.equal(e.status, 422)
  t.match(e.message, /spec\.agentz: unknown key `agentz` \(known: roles, users, .*agents.*\) \(line 6, column 3\)/)
  t.same(
    e.issues?.map((i) => i.path),
    ['spec.agentz'],
  )
  const top = caught(() =>
    validateConfigDocument(parseYamlDocument(`${config('  {}\n')}extra: 1\nmetadata2: x\n`, LIMITS)),
  )
  t.same(
    top.issues?.map((i) => i.path),
    ['extra', 'metadata2'],
    'every unknown key at once',
  )
  const many = caught(() =>
    validateConfigDocument(
      parseYamlDocument(
        `${config('  {}\n')}${'abcdef'
          .split('')
          .map((k) => `${k}: 1`)
          .join('\n')}\n`,
        LIMITS,
      ),
    ),
  )
  t.equal(many.issues?.length, 6)
  t.match(many.message, /^a: .*; b: .*; c: .*; and 3 more$/, 'the detail names the first few, errors has them all')
  const meta = caught(() =>
    validateConfigDocument(
      parseYamlDocument(
        'apiVersion: platform/v1\nkind: PlatformConfig\nmetadata: {name: x, nmae: y}\nspec: {}\n',
        LIMITS,
      ),
    ),
  )
  t.match(meta.message, /metadata\.nmae: unknown key/)
})

t.test('a wrong shape is named with its path', async (t) => {
  const wrongKind = caught(() =>
    validateConfigDocument(parseYamlDocument('apiVersion: platform/v1\nkind: PlatformPackage\nspec: {}\n', LIMITS)),
  )
  t.equal(wrongKind.code, 'config.invalid_document')
  t.match(wrongKind.issues?.[0], { path: 'kind', line: 2 })
  const notList = caught(() => validateConfigDocument(parseYamlDocument(config('  agents: {name: a}\n'), LIMITS)))
  t.match(notList.issues?.[0], { path: 'spec.agents', line: 6 })
  const notObject = caught(() => validateConfigDocument(parseYamlDocument(config('  agents: [a, b]\n'), LIMITS)))
  t.match(notObject.issues?.[0], { path: 'spec.agents[0]' }, 'resources are objects')
  const noSpec = caught(() =>
    validateConfigDocument(parseYamlDocument('apiVersion: platform/v1\nkind: PlatformConfig\n', LIMITS)),
  )
  t.match(noSpec.issues?.[0], { path: 'spec' })
  t.equal(caught(() => validateConfigDocument(parseYamlDocument('- a\n', LIMITS))).code, 'config.invalid_document')
})

t.test('resources of a document, keyed as references name them', async (t) => {
  const doc = parseYamlDocument(
    config(
      '  agents:\n    - {name: a, namespace: support}\n    - {name: b}\n  llmProviders:\n    - {name: openai}\n  users:\n    - {email: a@example.com}\n  dependencies:\n    - {package_name: numpy}\n',
    ),
    LIMITS,
  )
  const resources = documentResources(doc, validateConfigDocument(doc).spec)
  t.same(
    resources.map((r) => [r.kind, r.key, r.path]),
    [
      ['user', 'a@example.com', 'spec.users[0]'],
      ['llm_provider', 'openai', 'spec.llmProviders[0]'],
      ['dependency', 'numpy', 'spec.dependencies[0]'],
      ['agent', 'support/a', 'spec.agents[0]'],
      ['agent', 'default/b', 'spec.agents[1]'],
    ],
    'in the order sections are applied',
  )
  const twice = parseYamlDocument(config('  agents:\n    - {name: a}\n    - {name: a, namespace: default}\n'), LIMITS)
  const e = caught(() => documentResources(twice, validateConfigDocument(twice).spec))
  t.equal(e.code, 'config.invalid_document')
  t.match(e.message, /agent default\/a is defined twice \(first at spec\.agents\[0\]\) \(line 8, column 7\)/)
})

const pkg = (spec: string) =>
  `apiVersion: platform/v1\nkind: PlatformPackage\npackage:\n  name: crm\n  version: "1.2.0"\n  author: Ada\nspec:\n${spec}`

t.test('a package and its sections', async (t) => {
  const value = validatePackageDocument(
    parseYamlDocument(pkg('  agents: []\n  functions: []\n  variables: []\n'), LIMITS),
  )
  t.equal(value.package.name, 'crm')
  t.notOk(PACKAGE_SECTIONS.includes('secrets'), 'secrets come from secret variables')
  const unknown = caught(() => validatePackageDocument(parseYamlDocument(pkg('  secrets: []\n'), LIMITS)))
  t.equal(unknown.code, 'config.unknown_key')
  const version = caught(() =>
    validatePackageDocument(parseYamlDocument(pkg('  {}\n').replace('"1.2.0"', '1.2'), LIMITS)),
  )
  t.match(version.issues?.[0], { path: 'package.version', line: 5 }, 'a version is text (quote it)')
})

t.test('a package may not hold roles, users, LLM providers or database connections', async (t) => {
  for (const section of ['roles', 'users', 'llmProviders', 'databaseConnections']) {
    const e = caught(() => validatePackageDocument(parseYamlDocument(pkg(`  ${section}: []\n  bogus: 1\n`), LIMITS)))
    t.equal(e.code, 'package.forbidden_section', section)
    t.match(e.message, new RegExp(`packages may not hold ${section}$`))
    t.match(e.issues?.[0], { path: `spec.${section}`, line: 8 })
  }
  const two = caught(() => validatePackageDocument(parseYamlDocument(pkg('  users: []\n  roles: []\n'), LIMITS)))
  t.match(two.message, /roles, users/, 'every forbidden section is named')
})
