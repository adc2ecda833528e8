import type { OperationId, Operations } from './types.generated.ts'

/*
 * Types of one operation by route id, from the generated module: a page writes
 * `api<ResponseOf<'users.list'>>('GET', '/users')`, and a changed route breaks its type-check.
 */
export type ResponseOf<K extends OperationId> = Operations[K]['response']
export type BodyOf<K extends OperationId> = Operations[K]['body']
export type QueryOf<K extends OperationId> = Operations[K]['query']
