import { Type as T } from '@sinclair/typebox'
import {
  DbTrigger,
  DbTriggerCreateBody,
  DbTriggerListQuery,
  DbTriggerOwnerQuery,
  DbTriggerParams,
  DbTriggerUpdateBody,
} from '../../schemas/db-triggers.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * Database triggers: a name is unique per user, so
 * `/api/v1/database-triggers/{name}` is the caller's own trigger; `?owner_id=` names another
 * user's (admins, `platform.database-triggers.*:all`).
 */
const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['Database triggers']

export const DB_TRIGGER_ROUTES = {
  list: defineRoute({
    ...m,
    tags,
    id: 'db-triggers.list',
    method: 'GET',
    path: '/api/v1/database-triggers',
    summary: 'Your database triggers (`all=true`: every trigger, admins)',
    query: DbTriggerListQuery,
    response: T.Array(DbTrigger),
  }),
  create: defineRoute({
    ...m,
    tags,
    id: 'db-triggers.create',
    method: 'POST',
    path: '/api/v1/database-triggers',
    summary:
      'Create a database trigger: poll a table of a PostgreSQL connection for rows whose poll_column grew and call a function once per batch; you must be allowed to run the function and to use the connection',
    status: 201,
    body: DbTriggerCreateBody,
    response: DbTrigger,
    errors: [403, 404, 409, 422],
  }),
  get: defineRoute({
    ...m,
    tags,
    id: 'db-triggers.get',
    method: 'GET',
    path: '/api/v1/database-triggers/{name}',
    summary: 'A database trigger with its bookmark (last_poll_value) and last error',
    params: DbTriggerParams,
    query: DbTriggerOwnerQuery,
    response: DbTrigger,
    errors: [404],
  }),
  update: defineRoute({
    ...m,
    tags,
    id: 'db-triggers.update',
    method: 'PATCH',
    path: '/api/v1/database-triggers/{name}',
    summary:
      'Change a database trigger (its actor is told at once; another connection, schema, table or poll_column starts the bookmark again, without backfill)',
    params: DbTriggerParams,
    query: DbTriggerOwnerQuery,
    body: DbTriggerUpdateBody,
    response: DbTrigger,
    errors: [403, 404, 422],
  }),
  delete: defineRoute({
    ...m,
    tags,
    id: 'db-triggers.delete',
    method: 'DELETE',
    path: '/api/v1/database-triggers/{name}',
    summary: 'Delete a database trigger (its actor stops polling)',
    params: DbTriggerParams,
    query: DbTriggerOwnerQuery,
    status: 204,
    errors: [404],
  }),
}

export function dbTriggerRoutes(): RouteDef[] {
  return Object.values(DB_TRIGGER_ROUTES)
}
