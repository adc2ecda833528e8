import { SecretSpec } from '../../../schemas/secret.ts'
import { defineKind } from '../../resources/kind.ts'

/*
 * Secrets (`/api/v1/secrets/{namespace}/{name}`): a value for functions and connectors to use,
 * owned by its creator. `value` is a secret field: AES-256-GCM at rest with the row bound in as
 * associated data, never returned (`has_value` instead), masked on export.
 */
export const secretKind = defineKind({
  kind: 'secret',
  plural: 'secrets',
  title: 'Secret',
  description: 'Encrypted values owned by their creator.',
  spec: SecretSpec,
  secrets: ['value'],
})
