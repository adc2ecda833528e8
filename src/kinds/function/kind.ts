import { FunctionSpec } from '../../../schemas/function.ts'
import { schemaIssues } from '../../kernel/json-schema.ts'
import { defineKind } from '../../resources/kind.ts'

export const functionKind = defineKind({
  kind: 'function',
  plural: 'functions',
  title: 'Function',
  description: 'Python functions run in isolated sandboxes; every code change is a new version.',
  spec: FunctionSpec,
  adminFields: ['shared_pool'],
  versioned: ['code', 'entrypoint', 'input_schema', 'output_schema'],
  // Schemas must be valid JSON Schemas. That saved code parses and defines the entrypoint is the
  // functions feature's check, the icon the files feature's (their specChecks).
  validate: async (spec) => [
    ...schemaIssues('/input_schema', spec.input_schema),
    ...schemaIssues('/output_schema', spec.output_schema),
  ],
})
