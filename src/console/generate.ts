import { buildOpenApi } from '../../gateway/openapi.ts'
import type { RouteDef } from '../api/route.ts'
import type { AnyKind } from '../resources/kind.ts'
import { generateApiTypes, type ResourceKindInfo } from './api-types.ts'

/** Where the generated module lives, relative to the repository root. */
export const API_TYPES_FILE = 'console/src/api/types.generated.ts'

/** The kind descriptions the console's resource pages are built from. */
export const kindInfo = (k: AnyKind): ResourceKindInfo => ({
  kind: k.kind,
  plural: k.plural,
  title: k.title,
  description: k.description,
  addressing: k.addressing,
  updateMethod: k.updateMethod,
  adminOnly: k.adminOnly,
  secrets: k.secrets,
  versioned: k.versioned.length > 0,
})

/**
 * The text of console/src/api/types.generated.ts from the routes and kinds: the runtime and
 * management documents as the gateway serves them (the adapter's OpenAI wire is not the console's).
 * The version is fixed so a release does not change the file.
 */
export function consoleApiTypes(routes: readonly RouteDef[], kinds: readonly AnyKind[]): string {
  const docs = (['runtime', 'management'] as const).map((s) => buildOpenApi(routes, s, 'generated'))
  return generateApiTypes(docs, kinds.map(kindInfo))
}
