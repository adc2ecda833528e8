import { Type as T } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import t from 'tap'
import { checkConfigText } from '../../src/gitops/check-config.ts'
import { checkPackageText } from '../../src/gitops/check-package.ts'
import type { ResourceChecks } from '../../src/gitops/document-check.ts'
import { LIMITS } from './caught.ts'

/* The steps together, as validate, preview and install will call them: every failure is an answer with its code and located issues. */

// two kinds in the shape of the real ones: an agent refers to functions
const Agent = T.Object(
  {
    namespace: T.Optional(T.String()),
    name: T.String(),
    model: T.String(),
    enabled_functions: T.Array(T.String(), { default: [] }),
  },
  { additionalProperties: false },
)
const Fn = T.Object(
  { namespace: T.Optional(T.String()), name: T.String(), code: T.String() },
  { additionalProperties: false },
)
const schemas: Record<string, typeof Agent | typeof Fn> = { agent: Agent, function: Fn }

const checks: ResourceChecks = {
  checkResource: (kind, body) => {
    const schema = schemas[kind]
    return schema === undefined
      ? []
      : [...Value.Errors(schema, body)].map((e) => ({ path: e.path, message: e.message }))
  },
  refs: (kind, body) =>
    kind === 'agent'
      ? ((body['enabled_functions'] as string[] | undefined) ?? []).map((ref) => ({ kind: 'function', ref }))
      : [],
  exists: (kind, ref) => kind === 'function' && ref === 'lib/shared',
}

const CONFIG = `apiVersion: platform/v1
kind: PlatformConfig
metadata: {name: prod}
spec:
  agents:
    - name: helper
      model: \${MODEL}
      enabled_functions: [default/lookup, lib/shared]
  functions:
    - {name: lookup, code: "print(1)"}
`

t.test('a valid config: interpolated, resources in apply order', async (t) => {
  const r = checkConfigText(CONFIG, { MODEL: 'gpt-4o' }, { ...checks, limits: LIMITS })
  t.equal(r.valid, true)
  t.same(r.errors, [])
  t.equal(r.document?.spec.agents?.[0]?.['model'], 'gpt-4o')
  t.same(
    r.resources.map((x) => `${x.kind} ${x.key}`),
    ['function default/lookup', 'agent default/helper'],
  )
})

t.test('each step answers its code, located', async (t) => {
  const missing = checkConfigText(CONFIG, {}, { ...checks, limits: LIMITS })
  t.match(missing, {
    valid: false,
    code: 'config.missing_variable',
    errors: [{ path: 'spec.agents[0].model', line: 7 }],
  })
  const bad = checkConfigText(CONFIG.replace('model: ${MODEL}', 'modle: x'), {}, { ...checks, limits: LIMITS })
  t.equal(bad.code, 'config.invalid_document')
  t.same(bad.errors.map((e) => e.path).sort(), ['spec.agents[0].model', 'spec.agents[0].modle'], 'one issue per field')
  t.match(
    bad.errors.find((e) => e.path.endsWith('modle'))?.message,
    /^agent default\/helper: Unexpected property \(line 7, column 7\)$/,
  )
  t.match(
    bad.errors.find((e) => e.path.endsWith('model'))?.message,
    /^agent default\/helper: Expected required property \(line 6, column 7\)$/,
    'a missing field at its resource',
  )
  const dangling = checkConfigText(
    CONFIG.replace('lib/shared', 'lib/gone'),
    { MODEL: 'm' },
    { ...checks, limits: LIMITS },
  )
  t.match(dangling, {
    valid: false,
    code: 'config.dangling_reference',
    errors: [
      { path: 'spec.agents[0].enabled_functions[1]', message: /agent default\/helper refers to function lib\/gone/ },
    ],
  })
  t.match(checkConfigText('a: [', {}, { ...checks, limits: LIMITS }), { valid: false, code: 'config.invalid_yaml' })
  t.match(checkConfigText(`${CONFIG}oops: 1\n`, {}, { ...checks, limits: LIMITS }), { code: 'config.unknown_key' })
  t.throws(
    () =>
      checkConfigText(
        CONFIG,
        { MODEL: 'm' },
        {
          ...checks,
          refs: () => {
            throw new Error('a bug')
          },
          limits: LIMITS,
        },
      ),
    /a bug/,
    'a bug is not an answer',
  )
})

t.test('a cycle is a warning', async (t) => {
  const cyclic = `apiVersion: platform/v1
kind: PlatformConfig
spec:
  agents:
    - {name: a, model: m, enabled_functions: []}
  functions:
    - {name: f, code: x}
`
  const refs: ResourceChecks['refs'] = (kind) =>
    kind === 'agent' ? [{ kind: 'function', ref: 'default/f' }] : [{ kind: 'agent', ref: 'default/a' }]
  const r = checkConfigText(cyclic, {}, { ...checks, refs, limits: LIMITS })
  t.equal(r.valid, true)
  t.match(r.warnings, [/cycle: function default\/f → agent default\/a → function default\/f/])
})

const PACKAGE = `apiVersion: platform/v1
kind: PlatformPackage
package: {name: crm, version: "2.0"}
spec:
  variables:
    - {name: MODEL, type: enum, choices: [small, large], required: true}
    - {name: TOKEN, type: secret, required: true}
  agents:
    - {name: crm, model: "\${{ variables.MODEL }}", enabled_functions: [default/sync]}
  functions:
    - {name: sync, code: "token = '\${{ variables.TOKEN }}'"}
`

t.test('a package: preview without values, install with them', async (t) => {
  const preview = checkPackageText(PACKAGE, {}, { ...checks, limits: LIMITS })
  t.match(preview, { valid: false, code: 'package.variable_required', requiresInput: true })
  t.same(
    preview.variables.map((v) => v.name),
    ['MODEL', 'TOKEN'],
  )
  const install = checkPackageText(PACKAGE, { MODEL: 'large', TOKEN: 't0k' }, { ...checks, limits: LIMITS })
  t.equal(install.valid, true)
  t.equal(install.requiresInput, false)
  t.same(install.stored, { MODEL: 'large', TOKEN: '***' })
  t.same(install.document?.spec.functions?.[0], { name: 'sync', code: "token = 't0k'" })
  t.same(
    install.resources.map((x) => x.key),
    ['default/sync', 'default/crm'],
  )
  const forbidden = checkPackageText(
    `${PACKAGE}  roles: []\n`,
    { MODEL: 'large', TOKEN: 't' },
    { ...checks, limits: LIMITS },
  )
  t.match(forbidden, { code: 'package.forbidden_section', errors: [{ path: 'spec.roles', line: 12 }] })
})
