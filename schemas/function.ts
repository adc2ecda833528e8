import { Type as T } from '@sinclair/typebox'
import { Icon, JsonSchemaObject } from './common.ts'

/* Function fields. Code is Python with `def handler(input, context)`. */
export const FunctionSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000 }),
    code: T.String({ minLength: 1, maxLength: 1_000_000, description: 'Python source defining the entrypoint' }),
    entrypoint: T.String({ default: 'handler', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 128 }),
    input_schema: JsonSchemaObject,
    output_schema: JsonSchemaObject,
    icon: Icon,
    shared_pool: T.Boolean({
      default: false,
      description: 'admin only: run in persistent shared workers (trusted code)',
    }),
    requires_approval: T.Boolean({ default: false, description: 'agent tool calls wait for a user approval' }),
    timeout: T.Union([T.Integer({ minimum: 1, maximum: 86_400 }), T.Null()], {
      default: null,
      description:
        'seconds; null = FUNCTION_TIMEOUT, and never more than FUNCTION_TIMEOUT (a larger value is clamped at run time)',
    }),
  },
  { additionalProperties: false },
)
