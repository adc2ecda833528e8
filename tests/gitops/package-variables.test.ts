import t from 'tap'
import { validatePackageDocument } from '../../src/gitops/package-schema.ts'
import { parseYamlDocument } from '../../src/gitops/parse-document.ts'
import { readVariableDeclarations } from '../../src/gitops/read-variable-declarations.ts'
import { requiresInput, substitutePackageVariables } from '../../src/gitops/substitute-variables.ts'
import { caught, LIMITS } from './caught.ts'

/* Package variables: declarations, values checked by type, defaults, required, and substitution into the text before it is parsed. */

const PACKAGE = `apiVersion: platform/v1
kind: PlatformPackage
package: {name: crm, version: "1.0"}
spec:
  variables:
    - {name: TEAM, type: text, pattern: "^[a-z]+$", default: sales}
    - {name: VERBOSE, type: boolean, default: false}
    - {name: TIER, type: enum, choices: [small, large], required: true}
    - {name: PROVIDER, type: resource_ref, resource: llm_providers, required: true}
    - {name: API_KEY, type: secret, required: true, description: the CRM key}
    - {name: NOTE, type: text}
  agents:
    - name: \${{ variables.TEAM }}-bot
      namespace: \${{variables.TEAM}}
      llm_provider: "\${{ variables.PROVIDER }}"
      tags: [\${{ variables.TIER }}, x]
      verbose: \${{ variables.VERBOSE }}
      description: "\${{ variables.NOTE }}"
  functions:
    - {name: sync, namespace: crm, environment: {KEY: "\${{ variables.API_KEY }}"}}
`

const values = { TIER: 'large', PROVIDER: 'openai', API_KEY: 's3cr3t' }

t.test('declarations are read before substitution (placeholders in flow lists included)', async (t) => {
  const d = readVariableDeclarations(PACKAGE, LIMITS)
  t.same(
    d.map((v) => [v.name, v.type]),
    [
      ['TEAM', 'text'],
      ['VERBOSE', 'boolean'],
      ['TIER', 'enum'],
      ['PROVIDER', 'resource_ref'],
      ['API_KEY', 'secret'],
      ['NOTE', 'text'],
    ],
  )
  t.equal(requiresInput(d, {}), true, 'TIER, PROVIDER and API_KEY are required without defaults')
  t.equal(requiresInput(d, values), false)
  t.same(readVariableDeclarations('apiVersion: platform/v1\nspec: {}\n', LIMITS), [], 'no variables')
})

t.test('substitution happens in the text, before parsing; defaults fill the rest', async (t) => {
  const out = substitutePackageVariables(PACKAGE, values, { limits: LIMITS })
  t.same(out.values, {
    TEAM: 'sales',
    VERBOSE: 'false',
    TIER: 'large',
    PROVIDER: 'openai',
    API_KEY: 's3cr3t',
    NOTE: '',
  })
  t.same(out.stored, { ...out.values, API_KEY: '***' }, 'a secret is stored as the mask')
  const doc = parseYamlDocument(out.text, LIMITS)
  const pkg = validatePackageDocument(doc)
  t.same(
    pkg.spec.agents?.[0],
    {
      name: 'sales-bot',
      namespace: 'sales',
      llm_provider: 'openai',
      tags: ['large', 'x'],
      verbose: false,
      description: '',
    },
    'a boolean substituted unquoted parses as a boolean: replacement before parsing',
  )
  t.same(pkg.spec.functions?.[0], { name: 'sync', namespace: 'crm', environment: { KEY: 's3cr3t' } })
  const other = substitutePackageVariables(
    PACKAGE,
    { ...values, TEAM: 'support', VERBOSE: true, NOTE: 'n' },
    { limits: LIMITS },
  )
  t.match(other.text, /name: support-bot\n/)
  t.match(other.text, /verbose: true\n/)
})

t.test('each type checks its value', async (t) => {
  const refuse = (v: Record<string, unknown>, pattern: RegExp) => {
    const e = caught(() => substitutePackageVariables(PACKAGE, { ...values, ...v }, { limits: LIMITS }))
    t.equal(e.code, 'package.variable_invalid', JSON.stringify(v))
    t.match(e.message, pattern)
  }
  refuse({ TEAM: 'Sales1' }, /TEAM \(text\): does not match the pattern \^\[a-z\]\+\$/)
  refuse({ VERBOSE: 'yes' }, /VERBOSE \(boolean\): expected true or false/)
  refuse({ TIER: 'medium' }, /TIER \(enum\): expected one of: small, large/)
  refuse({ PROVIDER: '' }, /PROVIDER \(resource_ref\): expected the name of one of the llm_providers/)
  refuse({ API_KEY: '' }, /API_KEY \(secret\): a secret may not be empty/)
  refuse({ NOTE: 'a\nkind: evil' }, /NOTE \(text\): a value may not span lines/)
  refuse({ NOTE: { a: 1 } }, /NOTE \(text\): expected a string/)
  t.same(
    substitutePackageVariables(PACKAGE, { ...values, VERBOSE: 'true', NOTE: 42 }, { limits: LIMITS }).values.NOTE,
    '42',
    'a number is text',
  )
  const exists = (resource: string, ref: string) => resource === 'llm_providers' && ref === 'openai'
  t.equal(
    substitutePackageVariables(PACKAGE, values, { limits: LIMITS, resourceExists: exists }).values.PROVIDER,
    'openai',
  )
  const e = caught(() =>
    substitutePackageVariables(PACKAGE, { ...values, PROVIDER: 'gone' }, { limits: LIMITS, resourceExists: exists }),
  )
  t.match(e.message, /no llm_providers named gone/, 'a resource_ref names something that exists')
})

t.test('required variables must be supplied', async (t) => {
  const e = caught(() => substitutePackageVariables(PACKAGE, { TIER: 'small' }, { limits: LIMITS }))
  t.equal(e.code, 'package.variable_required')
  t.same(
    e.issues?.map((i) => i.path),
    ['variables.PROVIDER', 'variables.API_KEY'],
  )
})

t.test('unknown values and undeclared placeholders are refused', async (t) => {
  const unknown = caught(() => substitutePackageVariables(PACKAGE, { ...values, TEEM: 'x' }, { limits: LIMITS }))
  t.equal(unknown.code, 'package.variable_unknown')
  t.match(unknown.message, /declares no variable TEEM/)
  const undeclared = caught(() =>
    substitutePackageVariables(`${PACKAGE}  skills:\n    - name: \${{ variables.OOPS }}\n`, values, { limits: LIMITS }),
  )
  t.equal(undeclared.code, 'package.variable_undeclared')
  t.match(
    undeclared.message,
    /\$\{\{ variables\.OOPS \}\} names a variable the package does not declare .*line 22, column 13/,
  )
})

t.test('declarations must be usable', async (t) => {
  const bad = (decl: string, pattern: RegExp, code = 'config.invalid_document') => {
    const e = caught(() => readVariableDeclarations(`spec:\n  variables:\n    - ${decl}\n`, LIMITS))
    t.equal(e.code, code, decl)
    t.match(e.message, pattern)
  }
  bad('{name: A, type: enum}', /spec\.variables\[0\]\.choices: an enum variable needs its choices/)
  bad('{name: A, type: resource_ref}', /resource_ref variable needs its resource/)
  bad('{name: A, type: resource_ref, resource: agents}', /spec\.variables\[0\]\.resource/)
  bad('{name: A, type: text, pattern: "("}', /pattern: not a regular expression/)
  bad('{name: A, type: enum, choices: [a], default: b}', /the default does not fit the variable: expected one of: a/)
  bad('{name: A, type: number}', /spec\.variables\[0\]\.type/)
  bad('{name: A, type: text, secret: true}', /unknown key `secret`/, 'config.unknown_key')
  bad('{name: A-B, type: text}', /spec\.variables\[0\]\.name/)
  const twice = caught(() =>
    readVariableDeclarations(
      'spec:\n  variables:\n    - {name: A, type: text}\n    - {name: A, type: boolean}\n',
      LIMITS,
    ),
  )
  t.match(twice.message, /the variable A is declared twice \(line 4, column 8\)/)
})

t.test('the substituted text is held to the size cap too', async (t) => {
  const big = 'x'.repeat(9000)
  const e = caught(() => {
    const out = substitutePackageVariables(PACKAGE, { ...values, NOTE: big }, { limits: { ...LIMITS, maxBytes: 4096 } })
    parseYamlDocument(out.text, { ...LIMITS, maxBytes: 4096 })
  })
  t.equal(e.code, 'config.too_large')
})
