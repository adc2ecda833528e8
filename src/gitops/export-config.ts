import { stringify } from 'yaml'

/** `${NAME}` in a value: what interpolation would replace (interpolate-env.ts). */
const PLACEHOLDER = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/g

/**
 * Every `${NAME}` of the platform's values written as `$${NAME}`, which interpolation reads back
 * as the literal text: a function's code or a prompt holding `${x}` survives export and apply.
 */
function escapePlaceholders(v: unknown): unknown {
  if (typeof v === 'string') return v.replace(PLACEHOLDER, (m) => `$${m}`)
  if (Array.isArray(v)) return v.map(escapePlaceholders)
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, escapePlaceholders(item)]))
  return v
}

/** The sections `Applier.current` answers as a PlatformConfig document's YAML text. */
export function configYaml(sections: Record<string, Record<string, unknown>[]>, description: string): string {
  const doc = {
    apiVersion: 'platform/v1',
    kind: 'PlatformConfig',
    metadata: { name: 'export', description },
    spec: escapePlaceholders(sections),
  }
  return stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false })
}
