import { StoreSpec } from '../../../schemas/store.ts'
import { schemaIssues } from '../../kernel/json-schema.ts'
import { defineKind } from '../../resources/kind.ts'

/*
 * Stores (`/api/v1/stores/{namespace}/{name}`): persistent key-value state with an optional JSON
 * Schema for values and optional encryption at rest. The entries live in the `states` table and
 * are served by src/states/; deleting a store deletes its entries.
 */
export const storeKind = defineKind({
  kind: 'store',
  plural: 'stores',
  title: 'Store',
  description: 'Persistent key-value state for agents, components and functions.',
  spec: StoreSpec,
  // a schema that does not compile would refuse every write later: refuse it now
  validate: (s) => (s.schema === null ? [] : schemaIssues('/schema', s.schema)),
})
