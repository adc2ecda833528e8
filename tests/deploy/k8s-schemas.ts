import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'

/*
 * JSON schemas of the Kubernetes kinds for kubeconform, made from what @kubernetes/client-node (a
 * dependency of the platform, npm) ships: its models are generated from the Kubernetes OpenAPI
 * document (v1.34 for client-node 1.4), and each keeps the fields of its type with their JSON
 * names and types (`attributeTypeMap`) and, in its .d.ts, which fields are required (`'name':`
 * against `'image'?:`). kubeconform's own schemas are downloaded from GitHub, which this machine
 * cannot reach.
 *
 * What the schemas check: every field name (objects are closed: additionalProperties false, so a
 * misspelt or misplaced field fails), every type (string, integer, number, boolean, list, map,
 * int-or-string, nested objects), and the required fields. What they cannot: enum values, patterns
 * and the API server's own validation (the OpenAPI models do not carry them).
 *
 * One file per kind and API version, named as kubeconform's `{{ .ResourceKind }}{{ .KindSuffix }}`
 * template expects: `deployment-apps-v1.json`, `service-v1.json`, `networkpolicy-networking-v1.json`.
 * The group of a model comes from the API class that serves it (`/apis/apps/v1/…` in AppsV1Api).
 */

interface Attribute {
  name: string
  baseName: string
  type: string
  format: string
}

type Schema = Record<string, unknown>

const requireHere = createRequire(import.meta.url)

function clientNodeDir(): { dir: string; version: string } {
  const pkg = requireHere.resolve('@kubernetes/client-node/package.json')
  return {
    dir: join(dirname(pkg), 'dist', 'gen'),
    version: (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version,
  }
}

/** The attribute map of a model, read from its generated .js file (a JSON array literal). */
function attributesOf(modelsDir: string, model: string): Attribute[] | undefined {
  const file = join(modelsDir, `${model}.js`)
  if (!existsSync(file)) return undefined
  const text = readFileSync(file, 'utf8')
  const m = new RegExp(`${model}\\.attributeTypeMap = (\\[[\\s\\S]*?\\n\\]);`).exec(text)
  return m === null ? undefined : (JSON.parse(m[1] as string) as Attribute[])
}

/** The required fields of a model: the quoted property declarations without `?` in its .d.ts. */
function requiredOf(modelsDir: string, model: string): string[] {
  const file = join(modelsDir, `${model}.d.ts`)
  if (!existsSync(file)) return []
  return [...readFileSync(file, 'utf8').matchAll(/^\s+'([^']+)':/gm)].map((m) => m[1] as string)
}

/** Quantities (limits, requests) are strings in the models; Kubernetes takes numbers too. */
const QUANTITY_MAPS = new Set(['limits', 'requests', 'hard', 'capacity', 'allocatable'])

class Generator {
  readonly definitions: Record<string, Schema> = {}
  private readonly modelsDir: string

  constructor(modelsDir: string) {
    this.modelsDir = modelsDir
  }

  typeSchema(type: string, format: string, field: string): Schema {
    if (type === 'string') return format === 'int-or-string' ? { type: ['string', 'integer'] } : { type: 'string' }
    if (type === 'number') return format === 'int32' || format === 'int64' ? { type: 'integer' } : { type: 'number' }
    if (type === 'boolean') return { type: 'boolean' }
    if (type === 'Date') return { type: 'string' }
    if (type === 'any') return {}
    if (type === 'IntOrString') return { type: ['string', 'integer'] }
    const array = /^Array<(.+)>$/.exec(type)
    if (array !== null) return { type: 'array', items: this.typeSchema(array[1] as string, '', field) }
    const map = /^\{ \[key: string\]: (.+); \}$/.exec(type)
    if (map !== null) {
      const value = map[1] as string
      const values =
        value === 'string' && QUANTITY_MAPS.has(field)
          ? { type: ['string', 'number'] }
          : this.typeSchema(value, '', field)
      return { type: 'object', additionalProperties: values }
    }
    // a model: V1PodSpec, or a group-qualified one (RbacV1Subject, CoreV1EndpointPort)
    if (/^(?:[A-Z][a-z]+)?V\d\w*$/.test(type)) {
      this.define(type)
      return { $ref: `#/definitions/${type}` }
    }
    throw new Error(`no JSON schema for client-node type ${type}`)
  }

  define(model: string): void {
    if (model in this.definitions) return
    const attributes = attributesOf(this.modelsDir, model)
    if (attributes === undefined) {
      // a model without fields of its own (RawExtension and the like): any JSON value
      this.definitions[model] = {}
      return
    }
    const schema: Schema = { type: 'object', additionalProperties: false }
    this.definitions[model] = schema
    const properties: Record<string, Schema> = {}
    for (const a of attributes) properties[a.baseName] = this.typeSchema(a.type, a.format, a.baseName)
    schema['properties'] = properties
    const required = requiredOf(this.modelsDir, model).filter((name) =>
      attributes.some((a) => a.name === name && a.baseName !== 'apiVersion' && a.baseName !== 'kind'),
    )
    const baseNames = required.map((name) => attributes.find((a) => a.name === name)?.baseName as string)
    if (baseNames.length > 0) schema['required'] = baseNames
  }
}

/** Every top-level kind served by a `<Group><Version>Api` class, with its group and version. */
function servedKinds(genDir: string): { model: string; kind: string; group: string; version: string }[] {
  const out: { model: string; kind: string; group: string; version: string }[] = []
  const modelsDir = join(genDir, 'models')
  for (const file of readdirSync(join(genDir, 'apis'))) {
    if (!/V\d\w*Api\.js$/.test(file)) continue
    const text = readFileSync(join(genDir, 'apis', file), 'utf8')
    const path = /'\/apis?\/(?:([a-z0-9.-]+)\/)?(v\d[a-z0-9]*)\//.exec(text)
    if (path === null) continue
    const group = path[1] ?? ''
    const version = path[2] as string
    for (const m of new Set([...text.matchAll(/"(V\d\w*)"/g)].map((x) => x[1] as string))) {
      const attributes = attributesOf(modelsDir, m)
      if (attributes === undefined) continue
      const names = new Set(attributes.map((a) => a.baseName))
      if (!names.has('apiVersion') || !names.has('kind') || !names.has('metadata')) continue
      if (m.endsWith('List')) continue
      const kind = m.replace(/^V\d+(?:alpha\d+|beta\d+)?/, '')
      out.push({ model: m, kind, group, version })
    }
  }
  return out
}

/**
 * Writes the schemas (once per client-node version) under ~/.cache/agent-platform/k8s-schemas and
 * answers kubeconform's -schema-location template for them.
 */
export function kubernetesSchemas(): { location: string; dir: string; kubernetes: string } {
  const { dir: genDir, version } = clientNodeDir()
  const header = readFileSync(join(genDir, 'models', 'V1Deployment.js'), 'utf8')
  const kubernetes = /OpenAPI spec version: (\S+)/.exec(header)?.[1] ?? 'unknown'
  const dir = join(homedir(), '.cache', 'agent-platform', 'k8s-schemas', `client-node-${version}`)
  if (!existsSync(join(dir, 'deployment-apps-v1.json'))) {
    const tmp = `${dir}.tmp-${String(process.pid)}`
    rmSync(tmp, { recursive: true, force: true })
    mkdirSync(tmp, { recursive: true })
    for (const k of servedKinds(genDir)) {
      const g = new Generator(join(genDir, 'models'))
      g.define(k.model)
      const apiVersion = k.group === '' ? k.version : `${k.group}/${k.version}`
      const root = g.definitions[k.model] as Schema
      const properties = root['properties'] as Record<string, Schema>
      properties['apiVersion'] = { type: 'string', enum: [apiVersion] }
      properties['kind'] = { type: 'string', enum: [k.kind] }
      const schema = {
        $schema: 'http://json-schema.org/draft-07/schema#',
        description: `${k.kind} ${apiVersion} (Kubernetes ${kubernetes}, from @kubernetes/client-node ${version})`,
        ...root,
        required: [...new Set(['apiVersion', 'kind', ...((root['required'] as string[] | undefined) ?? [])])],
        definitions: g.definitions,
      }
      const suffix = k.group === '' ? k.version : `${k.group.split('.')[0] as string}-${k.version}`
      writeFileSync(join(tmp, `${k.kind.toLowerCase()}-${suffix}.json`), JSON.stringify(schema))
    }
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dirname(dir), { recursive: true })
    renameSync(tmp, dir)
  }
  return { location: join(dir, '{{ .ResourceKind }}{{ .KindSuffix }}.json'), dir, kubernetes }
}
