import { AppError } from '../kernel/errors.ts'
import { loadPrincipal } from '../auth/principal.ts'
import { secretKind } from '../kinds/secret/kind.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ConnectorDeps, ConnectorRecord } from './deps.ts'

/*
 * A connector's credential is a secret resource it names (`auth.secret`). Naming is not enough: the
 * secret is used only when the connector's OWNER may read it (owns it, or holds a read grant on
 * it). Otherwise anyone could write a connector that names someone else's secret and points
 * base_url at a server of theirs. The caller of the connector needs no access to the secret.
 */
const unavailable = (detail: string) => new AppError(409, 'connector.secret_unavailable', detail)

export async function secretValue(
  d: Pick<ConnectorDeps, 'db' | 'resources'>,
  connector: ConnectorRecord,
  ref: string,
): Promise<string> {
  const [secret] = await d.resources.loadMany(secretKind, [ref])
  if (secret === undefined || secret.is_active === false)
    throw unavailable(`the secret ${ref} of connector ${connector.namespace}/${connector.name} does not exist`)
  const [ns, name] = ref.split('/') as [string, string]
  let allowed = connector.owner_id !== null && secret.owner_id === connector.owner_id
  if (!allowed && connector.owner_id !== null) {
    const owner = await loadPrincipal(d.db, { sub: connector.owner_id, via: 'jwt' }).catch(() => null)
    allowed =
      owner !== null &&
      canOnResource(owner, secretKind, 'read', { namespace: ns, name, ownerId: secret.owner_id ?? null })
  }
  if (!allowed)
    throw unavailable(`the owner of connector ${connector.namespace}/${connector.name} may not use the secret ${ref}`)
  const value = (await d.resources.secretsOf(secretKind, secret.id))['value']
  if (value === undefined || value === '') throw unavailable(`the secret ${ref} has no value`)
  return value
}
