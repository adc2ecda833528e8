import { stringify } from 'yaml'
import type { ConfigCurrent, ConfigKind } from '../feature/config-kinds.ts'
import { AppError, invalid, notFound } from '../kernel/errors.ts'
import type { Db } from '../platform/db.ts'
import { PACKAGE_SECTIONS, type VariableDeclaration } from './package-schema.ts'
import { variableOfSecret } from './package-secrets.ts'

export interface PackageCreateRequest {
  name: string
  version: string
  description?: string
  author?: string
  url?: string
  resources: { type: string; namespace?: string; name: string }[]
}

/** The sections a package made from resources may hold: a package's, less dependencies (they are not resources of anyone's). */
const CREATABLE: ReadonlySet<string> = new Set(PACKAGE_SECTIONS.filter((s) => s !== 'dependencies'))

/** The kinds a package may refer to without holding them: an install asks which one to use. */
const ASKED_KINDS: Readonly<Record<string, 'llm_providers' | 'database_connections' | 'secrets'>> = {
  llm_provider: 'llm_providers',
  database_connection: 'database_connections',
  secret: 'secrets',
}

const placeholder = (name: string) => `\${{ variables.${name} }}`
const variableName = (...parts: string[]) =>
  parts
    .join('_')
    .toUpperCase()
    .replace(/[^A-Z0-9_]+/g, '_')
    .slice(0, 100)

/**
 * A `PlatformPackage` built from resources that exist, each as its kind's `list` gives it (as a
 * config document holds it). No secret value is ever written: a secret field of a resource
 * becomes a `secret` variable put in its place, a secret a resource refers to becomes a `secret`
 * variable kept at the same address (package-secrets.ts), or a `resource_ref` variable when its
 * address cannot be one; an LLM provider or database connection referred to becomes a
 * `resource_ref` variable whose default is the one used here.
 */
export async function createPackageYaml(
  db: Db,
  kinds: ReadonlyMap<string, ConfigKind>,
  req: PackageCreateRequest,
): Promise<string> {
  const variables = new Map<string, VariableDeclaration>()
  const sections = new Map<string, Record<string, unknown>[]>()
  const listed = new Map<string, ConfigCurrent[]>()
  const picked: { kind: ConfigKind; item: ConfigCurrent }[] = []
  for (const [i, r] of req.resources.entries()) {
    const kind = kinds.get(r.type)
    if (kind === undefined || !CREATABLE.has(kind.section))
      throw invalid(`a package cannot hold a ${r.type}`, [
        {
          path: `/resources/${String(i)}/type`,
          message: `one of ${[...kinds.values()]
            .filter((k) => CREATABLE.has(k.section))
            .map((k) => k.kind)
            .join(', ')}`,
        },
      ])
    let items = listed.get(r.type)
    if (items === undefined) listed.set(r.type, (items = await kind.list(db)))
    const ns = r.namespace ?? 'default'
    const keys = new Set([kind.keyOf({ namespace: ns, name: r.name }), `${ns}/${r.name}`, r.name])
    const item = items.find((c) => keys.has(c.key))
    if (item === undefined) throw notFound(`no ${r.type} ${ns}/${r.name}`)
    picked.push({ kind, item })
  }
  const inPackage = new Set(picked.map(({ kind, item }) => `${kind.kind} ${item.key}`))
  for (const { kind, item } of picked) {
    const body = structuredClone(item.body)
    for (const field of kind.secretFields) {
      const has = body[`has_${field}`]
      delete body[`has_${field}`]
      if (has === false) continue
      const name = variableName(kind.kind, item.key, field)
      variables.set(name, {
        name,
        type: 'secret',
        required: true,
        description: `${field} of ${kind.kind} ${item.key}`,
      })
      body[field] = placeholder(name)
    }
    for (const ref of kind.refs(body)) {
      const resource = ASKED_KINDS[ref.kind]
      if (resource === undefined || inPackage.has(`${ref.kind} ${ref.key}`) || ref.key.includes('*')) continue
      const secretVariable = ref.kind === 'secret' ? variableOfSecret(ref.key) : undefined
      if (secretVariable !== undefined) {
        variables.set(secretVariable, {
          name: secretVariable,
          type: 'secret',
          required: true,
          description: `the secret ${ref.key}`,
        })
        continue
      }
      const name = variableName(ref.kind, ref.key)
      variables.set(name, {
        name,
        type: 'resource_ref',
        resource,
        default: ref.key,
        description: `the ${ref.kind} to use (here: ${ref.key})`,
      })
      replaceStrings(body, ref.key, placeholder(name))
    }
    const list = sections.get(kind.section) ?? []
    list.push(body)
    sections.set(kind.section, list)
  }
  if (picked.length === 0) throw AppError.of('request.invalid', 'a package needs at least one resource')
  const doc = {
    apiVersion: 'platform/v1',
    kind: 'PlatformPackage',
    package: {
      name: req.name,
      version: req.version,
      ...(req.description === undefined ? {} : { description: req.description }),
      ...(req.author === undefined ? {} : { author: req.author }),
      ...(req.url === undefined ? {} : { url: req.url }),
    },
    spec: {
      ...(variables.size === 0 ? {} : { variables: [...variables.values()] }),
      ...Object.fromEntries(sections),
    },
  }
  return stringify(doc, { lineWidth: 0 })
}

/** Every string value equal to `from` (the reference to a kept resource) becomes `to`, at any depth. */
function replaceStrings(value: Record<string, unknown> | unknown[], from: string, to: string): void {
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : Object.entries(value)
  for (const [k, v] of entries) {
    if (v === from) (value as Record<string | number, unknown>)[k] = to
    else if (v !== null && typeof v === 'object') replaceStrings(v as Record<string, unknown>, from, to)
  }
}
