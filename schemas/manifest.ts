import { Type as T } from '@sinclair/typebox'
import { Name, NAME_PATTERN, Namespace, Ref } from './common.ts'

/* Manifest fields and its status answer. */
export const ResourceRefSpec = T.Object(
  {
    type: T.String({
      pattern: '^[a-z][a-z_]{0,62}$',
      description:
        'the resource kind, singular (`agent`, `function`, `skill`, `collection`, `store`, ...); the plural (`agents`) is accepted too',
    }),
    namespace: Namespace,
    name: Name,
  },
  { additionalProperties: false },
)

export const StoreDependency = T.Object(
  { store: Ref, key: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 512 }), T.Null()])) },
  { additionalProperties: false },
)

/** Namespaces per resource type (plural, as the discovery paths): `{"agents": ["support"], "templates": ["*"]}`. */
export const ExposedNamespaces = T.Record(
  T.String({ pattern: '^[a-z][a-z_-]{0,62}$' }),
  T.Array(T.Union([T.String({ pattern: NAME_PATTERN, maxLength: 63 }), T.Literal('*')]), { maxItems: 200 }),
  {
    default: {},
    description:
      'namespace filter per resource type (plural keys: agents, functions, skills, collections, templates, ...); `*` = every namespace',
  },
)

const Permission = T.String({ minLength: 1, maxLength: 300, pattern: '^platform\\.[^\\s]+$' })

export const ManifestSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000 }),
    required_resources: T.Array(ResourceRefSpec, { default: [], maxItems: 500 }),
    required_permissions: T.Array(Permission, { default: [], maxItems: 500 }),
    optional_permissions: T.Array(Permission, { default: [], maxItems: 500 }),
    exposed_namespaces: ExposedNamespaces,
    store_dependencies: T.Array(StoreDependency, { default: [], maxItems: 500 }),
  },
  { additionalProperties: false },
)

const ResourceStatus = T.Object({ type: T.String(), namespace: T.String(), name: T.String(), exists: T.Boolean() })
const PermissionStatus = T.Object({ granted: T.Array(T.String()), missing: T.Array(T.String()) })
const StoreStatus = T.Object({
  store: T.String(),
  key: T.Union([T.String(), T.Null()]),
  exists: T.Boolean(),
  key_checked: T.Boolean({
    description: 'false while no store module can look keys up (the store itself was checked)',
  }),
})

export const ManifestStatus = T.Object(
  {
    ready: T.Boolean({
      description:
        'every required resource exists, every required permission is granted and every store dependency exists',
    }),
    resources: T.Object({ satisfied: T.Array(ResourceStatus), missing: T.Array(ResourceStatus) }),
    permissions: T.Object({ required: PermissionStatus, optional: PermissionStatus }),
    stores: T.Object({ satisfied: T.Array(StoreStatus), missing: T.Array(StoreStatus) }),
  },
  { title: 'ManifestStatus' },
)
