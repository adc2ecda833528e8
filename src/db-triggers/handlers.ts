import type { JetStreamClient } from '@nats-io/jetstream'
import { dbTriggerProtocol } from '../../actors/protocols/db-trigger.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import type { DbTrigger } from '../../schemas/db-triggers.ts'
import type { ConnectionPools } from '../data/pools.ts'
import type { Config } from '../kernel/config.ts'
import { permissionSet } from '../feature/permissions.ts'
import { bind, type BoundRoute } from '../api/bind.ts'
import { can, type Principal } from '../auth/principal.ts'
import { executableFunction } from '../kinds/function/executable.ts'
import { conflict, forbidden, notFound } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import type { ResourceService } from '../resources/service.ts'
import { defaultOperations, inspectAtSave, operationPlan } from './operations.ts'
import { usableConnection } from './poll.ts'
import { DB_TRIGGER_ROUTES as R } from './routes.ts'
import { movesBookmark, type DbTriggerFields, type DbTriggerStore } from './store.ts'
import { ownedByName } from '../auth/owned-by-name.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const dbTriggerPermissions = permissionSet()

/*
 * Database trigger management. The row is the truth; after every change the trigger's actor
 * (key = id) is told (`set` with the row's version, `remove` after a delete). A message lost
 * between the commit and the send (a crash) is repaired at the next start (`announceAll`). The
 * owner must be allowed to run the function and to use the connection when saving (404 / 403) and
 * at every poll.
 */
export const DB_TRIGGER_PERMISSIONS = {
  create: dbTriggerPermissions.add(
    'platform.database-triggers.create:own',
    'Database triggers: create (functions you may run, connections you may use)',
  ),
  readOwn: dbTriggerPermissions.add('platform.database-triggers.read:own', 'Database triggers: list and read your own'),
  readAll: dbTriggerPermissions.add(
    'platform.database-triggers.read:all',
    "Database triggers: list and read everyone's (admin)",
  ),
  updateOwn: dbTriggerPermissions.add('platform.database-triggers.update:own', 'Database triggers: change your own'),
  updateAll: dbTriggerPermissions.add(
    'platform.database-triggers.update:all',
    "Database triggers: change everyone's (admin)",
  ),
  deleteOwn: dbTriggerPermissions.add('platform.database-triggers.delete:own', 'Database triggers: delete your own'),
  deleteAll: dbTriggerPermissions.add(
    'platform.database-triggers.delete:all',
    "Database triggers: delete everyone's (admin)",
  ),
}

export interface DbTriggerHandlerDeps {
  js: JetStreamClient
  names: NatsNames
  store: DbTriggerStore
  resources: ResourceService
  pools: ConnectionPools
  config: Pick<Config, 'DB_TRIGGER_STATEMENT_TIMEOUT_MS'>
  log: Logger
}

/** Tells the trigger's actor its settings (idempotent per version). */
export async function announce(d: Pick<DbTriggerHandlerDeps, 'js' | 'names'>, t: DbTrigger): Promise<void> {
  await sendToActor(
    d.js,
    d.names,
    dbTriggerProtocol,
    t.id,
    'set',
    { version: t.version, active: t.is_active, poll_interval_seconds: t.poll_interval_seconds },
    { msgId: `dbtrig-set-${t.id}-${String(t.version)}` },
  )
}

/** Tells the trigger's actor it is gone (after its row was deleted). */
export async function announceRemoved(d: Pick<DbTriggerHandlerDeps, 'js' | 'names'>, t: DbTrigger): Promise<void> {
  await sendToActor(
    d.js,
    d.names,
    dbTriggerProtocol,
    t.id,
    'remove',
    { version: t.version + 1 },
    { msgId: `dbtrig-remove-${t.id}` },
  )
}

/** At start: every trigger's actor gets its current settings (a no-op for actors already up to date). */
export async function announceAll(d: Pick<DbTriggerHandlerDeps, 'js' | 'names' | 'store' | 'log'>): Promise<void> {
  const all = await d.store.all()
  for (const t of all) await announce(d, t)
  d.log.info({ triggers: all.length }, 'database trigger actors told their settings')
}

export const fieldsOf = (t: DbTrigger): DbTriggerFields => ({
  database_connection_id: t.database_connection_id,
  schema_name: t.schema_name,
  table_name: t.table_name,
  operations: t.operations,
  created_column: t.created_column,
  function_namespace: t.function_namespace,
  function_name: t.function_name,
  poll_column: t.poll_column,
  poll_interval_seconds: t.poll_interval_seconds,
  batch_size: t.batch_size,
  description: t.description,
  is_active: t.is_active,
})

export function dbTriggerHandlers(d: DbTriggerHandlerDeps): BoundRoute[] {
  const { store } = d
  const P = DB_TRIGGER_PERMISSIONS

  /** The database trigger named for the principal: its own, or (with `all`) another owner's by owner_id; 404 otherwise. */
  const visible = ownedByName(store.byName, 'database trigger', 'db_trigger.not_found')

  /**
   * The function must be runnable by `p` (404 otherwise) and the connection usable (403 / 422);
   * the table, if it can be inspected now, must tell the operations apart (422), and a trigger
   * saved without operations gets those its table can tell (operations.ts).
   */
  const checkTargets = async (p: Principal, f: DbTriggerFields, operationsGiven: boolean): Promise<void> => {
    await executableFunction(d.resources, p, f.function_namespace, f.function_name)
    const connection = await usableConnection(d, p, f.database_connection_id)
    const target = { schema: f.schema_name, table: f.table_name, column: f.poll_column, created: f.created_column }
    const facts = await inspectAtSave(d.pools, connection, target, d.config.DB_TRIGGER_STATEMENT_TIMEOUT_MS, d.log)
    if (!operationsGiven) f.operations = defaultOperations(f.created_column, facts)
    if (facts !== null) operationPlan(f.operations, f.created_column, facts)
  }

  return [
    bind(R.list, async ({ principal: p, query }) => {
      const everyone = query.all === true && can(p, P.readAll)
      if (!everyone && !can(p, P.readOwn)) throw forbidden(`requires ${P.readOwn}`)
      return { body: await store.list(everyone ? null : p.userId, query.limit ?? 100, query.offset ?? 0) }
    }),
    bind(R.create, async ({ principal: p, body: b }) => {
      if (!can(p, P.create)) throw forbidden(`requires ${P.create}`)
      const f: DbTriggerFields = {
        database_connection_id: b.database_connection_id,
        schema_name: b.schema_name ?? 'public',
        table_name: b.table_name,
        operations: b.operations ?? [],
        created_column: b.created_column ?? null,
        function_namespace: b.function_namespace ?? 'default',
        function_name: b.function_name,
        poll_column: b.poll_column,
        poll_interval_seconds: b.poll_interval_seconds ?? 10,
        batch_size: b.batch_size ?? 100,
        description: b.description ?? '',
        is_active: b.is_active ?? true,
      }
      await checkTargets(p, f, b.operations !== undefined)
      const row = await store.create(p.userId, b.name, f)
      if (row === null) throw conflict(`you already have a database trigger named ${b.name}`, 'db_trigger.exists')
      await announce(d, row)
      return { status: 201, body: row }
    }),
    bind(R.get, async ({ principal: p, params, query }) => ({
      body: await visible(p, params.name, query.owner_id, P.readOwn, P.readAll),
    })),
    bind(R.update, async ({ principal: p, params, query, body: b }) => {
      const t = await visible(p, params.name, query.owner_id, P.updateOwn, P.updateAll)
      const before = fieldsOf(t)
      const given = Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined))
      const f: DbTriggerFields = { ...before, ...given }
      // the caller saves it: the caller must be allowed to run the function and use the connection
      await checkTargets(p, f, true)
      const row = await store.update(t.id, f, movesBookmark(before, f))
      if (row === null) throw notFound(`database trigger ${params.name} not found`, 'db_trigger.not_found')
      await announce(d, row)
      return { body: row }
    }),
    bind(R.delete, async ({ principal: p, params, query }) => {
      const t = await visible(p, params.name, query.owner_id, P.deleteOwn, P.deleteAll)
      await store.delete(t.id)
      await announceRemoved(d, t)
      return { status: 204 }
    }),
  ]
}
