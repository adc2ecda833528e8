import t from 'tap'
import { validateConfigDocument } from '../../src/gitops/config-schema.ts'
import { documentResources } from '../../src/gitops/document-resources.ts'
import { parseYamlDocument } from '../../src/gitops/parse-document.ts'
import { resolveReferences, type Reference } from '../../src/gitops/references.ts'
import { LIMITS } from './caught.ts'

/* Cross-references between the resources of a document: dangling ones named at both ends, apply order, cycles. */

// what the kinds' `refs` say, reduced to the fields these documents use
const refs = (kind: string, body: Record<string, unknown>): Reference[] => {
  const list = (field: string) => (Array.isArray(body[field]) ? (body[field] as string[]) : [])
  if (kind === 'agent')
    return [
      ...list('enabled_functions').map((ref) => ({ kind: 'function', ref })),
      ...list('enabled_agents').map((ref) => ({ kind: 'agent', ref })),
    ]
  if (kind === 'query') return [{ kind: 'database_connection', ref: String(body['database_connection']) }]
  return []
}

function resolve(spec: string, onPlatform: string[] = []) {
  const doc = parseYamlDocument(`apiVersion: platform/v1\nkind: PlatformConfig\nspec:\n${spec}`, LIMITS)
  const resources = documentResources(doc, validateConfigDocument(doc).spec)
  return resolveReferences(resources, { refs, exists: (kind, ref) => onPlatform.includes(`${kind} ${ref}`), doc })
}

t.test('referenced resources come first, document order otherwise', async (t) => {
  const r = resolve(`  agents:
    - {name: front, enabled_agents: [default/back], enabled_functions: [tools/lookup]}
    - {name: back, enabled_functions: [tools/*]}
    - {name: alone}
  functions:
    - {name: lookup, namespace: tools}
    - {name: other, namespace: tools}
  queries:
    - {name: q, database_connection: warehouse}
  databaseConnections:
    - {name: warehouse}
`)
  t.same(r.dangling, [])
  t.same(r.cycles, [])
  t.same(
    r.ordered.map((x) => `${x.kind} ${x.key}`),
    [
      'database_connection warehouse',
      'function tools/lookup',
      'function tools/other',
      'query default/q',
      'agent default/back',
      'agent default/front',
      'agent default/alone',
    ],
    'a wildcard orders after everything it matches',
  )
})

t.test('a dangling reference names both ends and the field', async (t) => {
  const r = resolve(
    `  agents:
    - name: a
      enabled_functions: [default/here, default/platform-fn, default/missing, nowhere/*]
  functions:
    - {name: here}
`,
    ['function default/platform-fn'],
  )
  t.same(
    r.dangling,
    [
      {
        path: 'spec.agents[0].enabled_functions[2]',
        message:
          'agent default/a refers to function default/missing, which is neither in the document nor on the platform (line 6, column 62)',
        line: 6,
        column: 62,
      },
    ],
    'on the platform is fine; a wildcard never dangles',
  )
})

t.test('a cycle is reported with its members, and every resource is still ordered', async (t) => {
  const r = resolve(`  agents:
    - {name: first}
    - {name: a, enabled_agents: [default/b]}
    - {name: b, enabled_agents: [default/c]}
    - {name: c, enabled_agents: [default/a]}
    - {name: after, enabled_agents: [default/a]}
    - {name: self, enabled_agents: [default/self]}
`)
  t.equal(r.cycles.length, 1)
  t.match(r.cycles[0], {
    path: 'spec.agents[1]',
    message: /cycle: agent default\/a → agent default\/b → agent default\/c → agent default\/a \(line 6, column 7\)$/,
  })
  t.same(
    r.ordered.map((x) => x.key),
    ['default/first', 'default/self', 'default/a', 'default/b', 'default/c', 'default/after'],
    'a reference to itself is no cycle; what is left goes last in document order',
  )
})
