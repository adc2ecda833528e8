import { FunctionSpec } from '../../../schemas/function.ts'
import { defineKind } from '../../resources/kind.ts'

export const functionKind = defineKind({
  kind: 'function',
  plural: 'functions',
  title: 'Function',
  description: 'Python functions run in isolated sandboxes; every code change is a new version.',
  spec: FunctionSpec,
  adminFields: ['shared_pool'],
  versioned: ['code', 'entrypoint', 'input_schema', 'output_schema'],
})
