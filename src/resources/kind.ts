import { Type as T, type Static, type TObject, type TProperties, type TSchema } from '@sinclair/typebox'
import type { FieldIssue } from '../kernel/errors.ts'
import { Name, Namespace, Timestamp, Uuid } from '../../schemas/common.ts'

/**
 * One description per resource kind. CRUD routes, validation, permissions, the OpenAPI documents,
 * encryption of secret fields, version rows and wildcard expansion are all derived from it by the
 * generic engine (`routes.ts`, `service.ts`); a kind adds behaviour only through `validate`.
 *
 * @example
 * export const skillKind = defineKind({ kind: 'skill', plural: 'skills', title: 'Skill', spec: SkillSpec })
 */
export interface KindOptions<S extends TObject> {
  /** Singular identifier, used in config documents and logs (`agent`). */
  kind: string
  /** Path segment and permission resource (`agents` → /api/v1/agents, platform.agents/...). */
  plural: string
  title: string
  spec: S
  /**
   * `namespaced`: addressed as `/{namespace}/{name}` (most kinds).
   * `named`: unique `name` with GET by name and PATCH/DELETE by id (LLM providers, connections).
   */
  addressing?: 'namespaced' | 'named'
  /** The update verb (PUT or PATCH) for this kind. */
  updateMethod?: 'PUT' | 'PATCH'
  /** Only principals holding `:all` grants may touch it (admin-only areas). */
  adminOnly?: boolean
  /** Spec fields that only admins may set to a non-default value. */
  adminFields?: (keyof Static<S> & string)[]
  /** Write-only fields: encrypted at rest, never returned, masked on export. */
  secrets?: (keyof Static<S> & string)[]
  /** Fields whose every change appends a version row. */
  versioned?: (keyof Static<S> & string)[]
  /** Boolean fields at most one resource of the kind may have set (setting one clears the others). */
  exclusiveFlags?: (keyof Static<S> & string)[]
  /** References to other resources, for config apply order and package export. */
  refs?: (spec: Static<S>) => { kind: string; ref: string }[]
  /**
   * Cross-field rules the schema cannot say; returns issues (empty = valid). May be async (a
   * check that runs a process must not block the resource service's event loop).
   */
  validate?: (spec: Static<S>) => FieldIssue[] | Promise<FieldIssue[]>
  description?: string
}

export interface Kind<S extends TObject = TObject> {
  kind: string
  plural: string
  title: string
  description: string
  spec: S
  addressing: 'namespaced' | 'named'
  updateMethod: 'PUT' | 'PATCH'
  adminOnly: boolean
  adminFields: string[]
  secrets: string[]
  versioned: string[]
  exclusiveFlags: string[]
  // Method syntax on purpose: it keeps Kind<Specific> assignable to Kind<TObject> (AnyKind).
  refs(spec: Static<S>): { kind: string; ref: string }[]
  validate(spec: Static<S>): FieldIssue[] | Promise<FieldIssue[]>
  /** Body of POST: address fields plus the spec. */
  createBody: TObject
  /** Body of PUT/PATCH: every spec field optional. */
  updateBody: TObject
  /** What the API returns for one resource. */
  record: TObject
}

export type AnyKind = Kind<TObject>

const commonRecord = {
  id: Uuid,
  managed_by: T.Union([T.String(), T.Null()], {
    description: '`config`, `pkg:<name>` or null (created through the API)',
  }),
  owner_id: T.Union([Uuid, T.Null()]),
  version: T.Integer({ description: 'increments on every change of a versioned field' }),
  is_active: T.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
}

export function defineKind<S extends TObject>(options: KindOptions<S>): Kind<S> {
  const secrets = options.secrets ?? []
  const addressing = options.addressing ?? 'namespaced'
  const address: TProperties =
    addressing === 'namespaced' ? { namespace: T.Optional(Namespace), name: Name } : { name: Name }
  const specProps = options.spec.properties as TProperties
  const visible: TProperties = {}
  for (const [key, schema] of Object.entries(specProps)) {
    if (secrets.includes(key as never))
      visible[`has_${key}`] = T.Boolean({ description: `whether ${key} is set (the value is never returned)` })
    else visible[key] = stripDefault(schema)
  }
  // Fields with a default may be left out of a create body.
  const createProps = Object.fromEntries(
    Object.entries(specProps).map(([k, sch]) => [k, 'default' in sch ? T.Optional(sch) : sch]),
  )
  const createBody = T.Object(
    { ...address, ...createProps, is_active: T.Optional(T.Boolean({ default: true })) },
    { additionalProperties: false, title: `${options.title}Create` },
  )
  const updateBody = T.Object(
    {
      ...Object.fromEntries(Object.entries(specProps).map(([k, s]) => [k, T.Optional(stripDefault(s))])),
      is_active: T.Optional(T.Boolean()),
    },
    { additionalProperties: false, title: `${options.title}Update` },
  )
  const recordAddress: TProperties = addressing === 'namespaced' ? { namespace: Name, name: Name } : { name: Name }
  const record = T.Object({ ...commonRecord, ...recordAddress, ...visible }, { title: options.title })
  return {
    kind: options.kind,
    plural: options.plural,
    title: options.title,
    spec: options.spec,
    addressing,
    updateMethod: options.updateMethod ?? 'PUT',
    adminOnly: options.adminOnly ?? false,
    adminFields: options.adminFields ?? [],
    secrets,
    versioned: options.versioned ?? [],
    exclusiveFlags: options.exclusiveFlags ?? [],
    refs: options.refs ?? (() => []),
    validate: options.validate ?? (() => []),
    description: options.description ?? '',
    createBody,
    updateBody,
    record,
  }
}

/** Defaults belong to creation; on update an absent field means "unchanged". */
function stripDefault(schema: TSchema): TSchema {
  if (!('default' in schema)) return schema
  const { default: _d, ...rest } = schema as TSchema & { default: unknown }
  return rest as TSchema
}
