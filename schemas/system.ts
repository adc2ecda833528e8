import { Type as T } from '@sinclair/typebox'

/* What the gateway answers itself. */
export const Health = T.Object({ status: T.Literal('ok'), nats: T.String(), version: T.String() })
