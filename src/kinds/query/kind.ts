import { QuerySpec } from '../../../schemas/query.ts'
import { defineKind } from '../../resources/kind.ts'
import { schemaIssues } from '../../kernel/json-schema.ts'
import { querySqlIssues } from '../../data/save-checks.ts'

export const queryKind = defineKind({
  kind: 'query',
  plural: 'queries',
  title: 'Query',
  description: 'Saved parameterized SQL on a database connection, executable over the API and as an agent tool.',
  spec: QuerySpec,
  versioned: ['sql'],
  // A broken schema, an unterminated literal or SQL its operation may not run (on a Postgres
  // connection: src/data/pg-sql-check.ts) is refused when the query is saved (422), not at execution.
  validate: async (s) => [
    ...schemaIssues('input_schema', s.input_schema),
    ...schemaIssues('output_schema', s.output_schema),
    ...(await querySqlIssues(s)),
  ],
})
