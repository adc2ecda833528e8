import { Type as T } from '@sinclair/typebox'
import { Name, Namespace, Uuid } from './common.ts'

/* Shapes every resource kind's management routes share; each kind's own record and bodies come from its spec via defineKind. */
export const ResourceVersion = T.Object(
  {
    version: T.Integer(),
    fields: T.Record(T.String(), T.Unknown()),
    created_by: T.Union([Uuid, T.Null()]),
    created_at: T.String(),
  },
  { title: 'ResourceVersion' },
)

/** A namespaced kind's address. */
export const NamespacedParams = T.Object({ namespace: Namespace, name: Name })
/** A named kind is read by name… */
export const NameParams = T.Object({ name: Name })
/** …and changed by id. */
export const IdParams = T.Object({ id: Uuid })

/** The message on `resources.changed` (NATS): the publishing process `o`, a kind `k`, and one row of it (`i`, its addresses `a`) or all of it. */
export const ResourceChange = T.Object(
  { o: T.String(), k: T.String(), i: T.Optional(T.String()), a: T.Optional(T.Array(T.String())) },
  { title: 'ResourceChange' },
)
