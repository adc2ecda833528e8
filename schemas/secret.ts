import { Type as T } from '@sinclair/typebox'

/* Secret fields. `value` is write-only: the API answers `has_value` instead. */
export const SecretSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000 }),
    value: T.Optional(T.String({ maxLength: 65_536, description: 'the secret (write-only)' })),
  },
  { additionalProperties: false },
)
