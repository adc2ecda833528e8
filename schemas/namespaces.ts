import { Type as T, type Static } from '@sinclair/typebox'
import { Name, Nullable, Uuid } from './common.ts'

/* Namespaces and who may create in them (docs/security.md#access-control); the record is also what src/resources/namespace-store.ts reads from Postgres. */
export const NamespaceMember = T.Object({
  user_id: Uuid,
  granted_by: Nullable(Uuid),
  accepted: T.Boolean({
    description: "the member's own agents pick this namespace through wildcards only once accepted",
  }),
})
export type NamespaceMember = Static<typeof NamespaceMember>

export const NamespaceRecord = T.Object(
  {
    name: Name,
    owner_id: Nullable(Uuid),
    members: T.Array(NamespaceMember, {
      description: 'users the owner (or an admin) granted the namespace to; they may create in it',
    }),
    created_at: T.String(),
  },
  { title: 'Namespace' },
)
export type NamespaceRecord = Static<typeof NamespaceRecord>

export const NamespaceByName = T.Object({ name: Name })
export const NamespaceMemberParams = T.Object({ name: Name, user_id: Uuid })
export const NamespaceListQuery = T.Object({
  limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  offset: T.Optional(T.Integer({ minimum: 0, default: 0 })),
})
export const NamespaceList = T.Object({ items: T.Array(NamespaceRecord), total: T.Integer() })
export const NamespaceCreateBody = T.Object({ name: Name }, { additionalProperties: false })
