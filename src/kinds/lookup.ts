import type { AnyKind } from '../resources/kind.ts'

/**
 * A registered kind by the name a manifest or a discovery path uses: singular (`agent`) or plural
 * (`agents`). Looked up in the resource service's registry at call time, so a kind registered by
 * another feature (collections, stores) is found as soon as it exists; undefined until then.
 */
export function kindByName(kinds: ReadonlyMap<string, AnyKind>, name: string): AnyKind | undefined {
  const direct = kinds.get(name)
  if (direct !== undefined) return direct
  for (const k of kinds.values()) if (k.plural === name) return k
  return undefined
}
