import { QuerySpec } from '../../../schemas/query.ts'
import { defineKind } from '../../resources/kind.ts'
import { schemaIssues } from '../../kernel/json-schema.ts'

export const queryKind = defineKind({
  kind: 'query',
  plural: 'queries',
  title: 'Query',
  description: 'Saved parameterized SQL on a database connection, executable over the API and as an agent tool.',
  spec: QuerySpec,
  versioned: ['sql'],
  // A broken schema is refused when the query is saved (422), not at execution; so are an
  // unterminated literal and SQL its operation may not run, by the data feature's check
  // (its specChecks: src/data/save-checks.ts).
  validate: async (s) => [
    ...schemaIssues('input_schema', s.input_schema),
    ...schemaIssues('output_schema', s.output_schema),
  ],
})
