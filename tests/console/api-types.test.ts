import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { schemaToTs } from '../../src/console/api-types.ts'
import { API_TYPES_FILE, consoleApiTypes } from '../../src/console/generate.ts'
import { featureKinds, featureRoutes } from '../../src/feature/collect.ts'
import { FEATURES } from '../../src/features.ts'

/*
 * The console's API types are generated from the platform's OpenAPI documents: the committed file
 * must be what the generator writes now, so a changed route shows up in the console's type-check
 * (regenerate with `npm run --silent cli -- console-api --write`).
 */
t.test('console/src/api/types.generated.ts is current', async (t) => {
  const committed = readFileSync(join(import.meta.dirname, '..', '..', API_TYPES_FILE), 'utf8')
  const now = consoleApiTypes(featureRoutes(FEATURES), featureKinds(FEATURES))
  t.ok(
    committed === now,
    committed === now
      ? 'the committed file is what the generator writes'
      : `${API_TYPES_FILE} is stale: run npm run --silent cli -- console-api --write`,
  )
  t.match(now, /"skills\.create": \{/, 'an operation per route id')
  t.match(now, /"plural": "skills"/, 'the kinds')
})

t.test('JSON Schema to TypeScript', async (t) => {
  t.equal(schemaToTs({ type: 'string' }), 'string')
  t.equal(schemaToTs({ anyOf: [{ type: 'string' }, { type: 'null' }] }), 'string | null')
  t.equal(schemaToTs({ anyOf: [{ const: 'a' }, { const: 'b' }] }), '"a" | "b"')
  t.equal(schemaToTs({ type: 'array', items: { type: 'integer' } }), 'number[]')
  t.equal(
    schemaToTs({ type: 'object', properties: { a: { type: 'boolean' }, 'b-c': { type: 'string' } }, required: ['a'] }),
    '{\n  a: boolean\n  "b-c"?: string\n}',
  )
  t.equal(schemaToTs({ type: 'object', patternProperties: { '^.*$': { type: 'number' } } }), 'Record<string, number>')
  t.equal(schemaToTs({}), 'unknown', 'no type: unknown')
  t.equal(schemaToTs({ $ref: '#/components/schemas/ErrorBody' }), 'ErrorBody')
})
