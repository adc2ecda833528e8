import { Type as T } from '@sinclair/typebox'
import { Name, Namespace, Uuid } from './common.ts'

/* Shapes every resource kind's management routes share (SPEC.md §4); each kind's own record and bodies come from its spec via defineKind. */
export const ResourceVersion = T.Object({ version: T.Integer(), fields: T.Record(T.String(), T.Unknown()), created_by: T.Union([Uuid, T.Null()]), created_at: T.String() }, { title: 'ResourceVersion' })

/** A namespaced kind's address. */
export const NamespacedParams = T.Object({ namespace: Namespace, name: Name })
/** A named kind is read by name… */
export const NameParams = T.Object({ name: Name })
/** …and changed by id. */
export const IdParams = T.Object({ id: Uuid })
