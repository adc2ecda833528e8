import { FunctionSpec } from '../../../schemas/function.ts'
import { checkPythonCode } from '../../functions/check-code.ts'
import { schemaIssues } from '../../kernel/json-schema.ts'
import { defineKind } from '../../resources/kind.ts'
import { iconIssues } from '../../files/icon-check.ts'

export const functionKind = defineKind({
  kind: 'function',
  plural: 'functions',
  title: 'Function',
  description: 'Python functions run in isolated sandboxes; every code change is a new version.',
  spec: FunctionSpec,
  adminFields: ['shared_pool'],
  versioned: ['code', 'entrypoint', 'input_schema', 'output_schema'],
  // Saved code must parse and define the entrypoint; schemas must be valid JSON Schemas.
  validate: async (spec) => [
    ...schemaIssues('/input_schema', spec.input_schema),
    ...schemaIssues('/output_schema', spec.output_schema),
    ...(await iconIssues('/icon', spec.icon)),
    ...(await checkPythonCode(spec.code, spec.entrypoint, process.env['SANDBOX_PYTHON'] ?? '/usr/bin/python3')),
  ],
})
