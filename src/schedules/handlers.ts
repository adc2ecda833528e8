import type { JetStreamClient } from '@nats-io/jetstream'
import { scheduleProtocol } from '../../actors/protocols/schedule.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import type { Schedule } from '../../schemas/triggers.ts'
import { bind, type BoundRoute } from '../api/bind.ts'
import { permissionSet } from '../feature/permissions.ts'
import { can, type Principal } from '../auth/principal.ts'
import type { ChatService } from '../chats/service.ts'
import { executableFunction } from '../kinds/function/executable.ts'
import { conflict, forbidden, invalid, notFound } from '../kernel/errors.ts'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import type { ResourceService } from '../resources/service.ts'
import { checkCron, checkMinInterval, nextTick } from '../kernel/cron.ts'
import { SCHEDULE_ROUTES as R } from './routes.ts'
import type { ScheduleFields, ScheduleStore } from './store.ts'
import { ownedByName } from '../auth/owned-by-name.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const schedulePermissions = permissionSet()

/*
 * Schedule management. The row is the truth; after every change the schedule's actor (key = id)
 * is told (`set` with the row's version, `remove` after a delete) — the actor owns the timing.
 * A message lost between the commit and the send (a crash) is repaired at the next start
 * (`announceAll`). The owner must be allowed to run the target when saving and at every tick.
 */
export const SCHEDULE_PERMISSIONS = {
  create: schedulePermissions.add('platform.schedules.create:own', 'Schedules: create (targets you may run)'),
  readOwn: schedulePermissions.add('platform.schedules.read:own', 'Schedules: list and read your own'),
  readAll: schedulePermissions.add('platform.schedules.read:all', "Schedules: list and read everyone's (admin)"),
  updateOwn: schedulePermissions.add('platform.schedules.update:own', 'Schedules: change your own'),
  updateAll: schedulePermissions.add('platform.schedules.update:all', "Schedules: change everyone's (admin)"),
  deleteOwn: schedulePermissions.add('platform.schedules.delete:own', 'Schedules: delete your own'),
  deleteAll: schedulePermissions.add('platform.schedules.delete:all', "Schedules: delete everyone's (admin)"),
}

export interface ScheduleHandlerDeps {
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  store: ScheduleStore
  resources: ResourceService
  chats: ChatService
  config: Pick<Config, 'SCHEDULE_MIN_INTERVAL_SECONDS'>
  log: Logger
}

/** Tells the schedule's actor what it must do now (idempotent per version). */
export async function announce(d: Pick<ScheduleHandlerDeps, 'js' | 'names'>, s: Schedule): Promise<void> {
  await sendToActor(
    d.js,
    d.names,
    scheduleProtocol,
    s.id,
    'set',
    { version: s.version, cron_expression: s.cron_expression, timezone: s.timezone, active: s.is_active },
    { msgId: `sched-set-${s.id}-${String(s.version)}` },
  )
}

/** At start: every schedule's actor gets its current settings (a no-op for actors already up to date). */
export async function announceAll(d: Pick<ScheduleHandlerDeps, 'js' | 'names' | 'store' | 'log'>): Promise<void> {
  const all = await d.store.all()
  for (const s of all) await announce(d, s)
  d.log.info({ schedules: all.length }, 'schedule actors told their settings')
}

/**
 * What a schedule's settings must hold whoever saves them (the API and config): an agent schedule's
 * message, a cron expression and zone croner can use, and for a principal who may not change
 * everyone's schedules the minimum interval.
 */
export function checkScheduleFields(
  p: Principal,
  f: ScheduleFields,
  config: Pick<Config, 'SCHEDULE_MIN_INTERVAL_SECONDS'>,
): void {
  if (f.schedule_type === 'agent' && (f.content === null || f.content === ''))
    throw invalid('an agent schedule needs `content` (the message it sends)', [
      { path: '/content', message: 'required for agent schedules' },
    ])
  checkCron(f.cron_expression, f.timezone)
  // a plain user's `* * * * * *` would run every second; admins (who may change everyone's schedules) are trusted with that
  if (!can(p, SCHEDULE_PERMISSIONS.updateAll))
    checkMinInterval(f.cron_expression, f.timezone, config.SCHEDULE_MIN_INTERVAL_SECONDS)
}

/** Tells the schedule's actor it is gone (after its row was deleted). */
export async function announceRemoved(d: Pick<ScheduleHandlerDeps, 'js' | 'names'>, s: Schedule): Promise<void> {
  await sendToActor(
    d.js,
    d.names,
    scheduleProtocol,
    s.id,
    'remove',
    { version: s.version + 1 },
    { msgId: `sched-remove-${s.id}` },
  )
}

export function scheduleHandlers(d: ScheduleHandlerDeps): BoundRoute[] {
  const { store } = d
  const P = SCHEDULE_PERMISSIONS

  /** The schedule named for the principal: its own, or (with `all`) another owner's by owner_id; 404 otherwise. */
  const visible = ownedByName(store.byName, 'schedule', 'schedule.not_found')

  /** The target must exist and be runnable by `p` (function: execute; agent: chat); 404 otherwise. */
  const checkTarget = async (p: Principal, f: ScheduleFields): Promise<void> => {
    if (f.schedule_type === 'function') await executableFunction(d.resources, p, f.target_namespace, f.target_name)
    else await d.chats.agentFor(p, f.target_namespace, f.target_name)
    checkScheduleFields(p, f, d.config)
  }

  const fieldsOf = (s: Schedule): ScheduleFields => ({
    schedule_type: s.schedule_type,
    target_namespace: s.target_namespace,
    target_name: s.target_name,
    cron_expression: s.cron_expression,
    timezone: s.timezone,
    input_data: s.input_data,
    content: s.content,
    description: s.description,
    is_active: s.is_active,
  })

  return [
    bind(R.list, async ({ principal: p, query }) => {
      const everyone = query.all === true && can(p, P.readAll)
      if (!everyone && !can(p, P.readOwn)) throw forbidden(`requires ${P.readOwn}`)
      return { body: await store.list(everyone ? null : p.userId, query.limit ?? 100, query.offset ?? 0) }
    }),
    bind(R.create, async ({ principal: p, body: b }) => {
      if (!can(p, P.create)) throw forbidden(`requires ${P.create}`)
      const f: ScheduleFields = {
        schedule_type: b.schedule_type,
        target_namespace: b.target_namespace ?? 'default',
        target_name: b.target_name,
        cron_expression: b.cron_expression.trim(),
        timezone: b.timezone ?? 'UTC',
        input_data: b.input_data ?? {},
        content: b.schedule_type === 'agent' ? (b.content ?? null) : null,
        description: b.description ?? '',
        is_active: b.is_active ?? true,
      }
      await checkTarget(p, f)
      const row = await store.create(p.userId, b.name, f)
      if (row === null) throw conflict(`you already have a schedule named ${b.name}`, 'schedule.exists')
      await announce(d, row)
      return { status: 201, body: row }
    }),
    bind(R.get, async ({ principal: p, params, query }) => {
      const s = await visible(p, params.name, query.owner_id, P.readOwn, P.readAll)
      const runs = await store.runs(s.id, query.runs ?? 20)
      const next = s.is_active ? nextTick(s.cron_expression, s.timezone, Date.now()) : null
      return {
        body: { ...s, next_run: next === null ? null : new Date(next).toISOString(), last_run: runs[0] ?? null, runs },
      }
    }),
    bind(R.update, async ({ principal: p, params, query, body: b }) => {
      const s = await visible(p, params.name, query.owner_id, P.updateOwn, P.updateAll)
      const given = Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined))
      const f: ScheduleFields = { ...fieldsOf(s), ...given }
      if (f.schedule_type === 'function') f.content = null
      f.cron_expression = f.cron_expression.trim()
      await checkTarget(p, f)
      const row = await store.update(s.id, f)
      if (row === null) throw notFound(`schedule ${params.name} not found`, 'schedule.not_found')
      await announce(d, row)
      return { body: row }
    }),
    bind(R.delete, async ({ principal: p, params, query }) => {
      const s = await visible(p, params.name, query.owner_id, P.deleteOwn, P.deleteAll)
      await store.delete(s.id)
      await announceRemoved(d, s)
      return { status: 204 }
    }),
  ]
}
