import { ScheduleCreateBody } from '../../schemas/triggers.ts'
import type { AfterCommit, ConfigCurrent, ConfigKind } from '../feature/config-kinds.ts'
import { bodyChecksum, bodyIssues, issuesOf } from '../feature/config-kind-support.ts'
import type { ServiceContext } from '../feature/define.ts'
import { conflict, invalid, notFound } from '../kernel/errors.ts'
import { announce, announceRemoved, checkScheduleFields } from './handlers.ts'
import { scheduleStore, type ManagedScheduleRow, type ScheduleFields } from './store.ts'

/*
 * Schedules as a config kind (section `schedules`). Key: the name. Through the API a name is
 * unique per owner; a file names no owner, so config addresses a schedule by its name alone: a
 * schedule config or a package manages has a name unique among the managed ones (migration 0034),
 * and of several schedules of one name the managed one, else the oldest, is the one config sees
 * (made by hand, it shows as a conflict until forced). A schedule config creates is owned by the
 * principal applying it, and runs as that owner; an update keeps the owner. The target is named
 * `target_namespace` / `target_name` (a function or an agent). The cron checks are the API's (the
 * minimum interval applies to principals who may not change everyone's schedules); the actor is
 * told the new settings after the commit.
 */
const text = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback)

/** The body with the API's defaults filled: what a schedule written from it stores. */
export function scheduleFields(body: Readonly<Record<string, unknown>>): ScheduleFields {
  const type = text(body['schedule_type'], 'function')
  const input = body['input_data']
  return {
    schedule_type: type,
    target_namespace: text(body['target_namespace'], 'default'),
    target_name: text(body['target_name'], ''),
    cron_expression: text(body['cron_expression'], '').trim(),
    timezone: text(body['timezone'], 'UTC'),
    input_data:
      typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : {},
    content: type === 'agent' && typeof body['content'] === 'string' ? body['content'] : null,
    description: text(body['description'], ''),
    is_active: typeof body['is_active'] === 'boolean' ? body['is_active'] : true,
  }
}

const bodyOf = (name: string, f: ScheduleFields): Record<string, unknown> => ({ name, ...f })
const checksumOf = (body: Readonly<Record<string, unknown>>): string =>
  bodyChecksum(bodyOf(text(body['name'], ''), scheduleFields(body)))

const currentOf = (r: ManagedScheduleRow): ConfigCurrent => {
  const body = bodyOf(r.name, scheduleFields(r))
  return { key: r.name, body, managedBy: r.managed_by, checksum: r.checksum ?? checksumOf(body) }
}

export function scheduleConfigKind(ctx: ServiceContext): ConfigKind {
  return {
    kind: 'schedule',
    section: 'schedules',
    packageable: true,
    secretFields: [],
    keyOf: (body) => text(body['name'], ''),
    refs: (body) => {
      const f = scheduleFields(body)
      return [
        { kind: f.schedule_type === 'agent' ? 'agent' : 'function', key: `${f.target_namespace}/${f.target_name}` },
      ]
    },
    checksum: checksumOf,
    async validate(p, body) {
      const issues = bodyIssues(ScheduleCreateBody, body)
      if (issues.length > 0) return issues
      return issuesOf(() => checkScheduleFields(p, scheduleFields(body), ctx.config))
    },
    list: async (db) => (await scheduleStore(db).allForConfig()).map(currentOf),
    async write(tx, p, body, { managedBy }): Promise<AfterCommit[]> {
      const name = text(body['name'], '')
      const issues = bodyIssues(ScheduleCreateBody, body)
      if (issues.length > 0) throw invalid(`invalid schedule ${name}`, issues)
      const f = scheduleFields(body)
      checkScheduleFields(p, f, ctx.config)
      const store = scheduleStore(tx)
      const managed = { by: managedBy, checksum: checksumOf(body) }
      const row = await store.byConfigName(name)
      const next =
        row === null ? await store.create(p.userId, name, f, managed) : await store.update(row.id, f, managed)
      if (next === null)
        throw row === null
          ? conflict(`a schedule named ${name} exists`, 'schedule.exists')
          : notFound(`schedule ${name} not found`, 'schedule.not_found')
      return [() => announce(ctx, next)]
    },
    async remove(tx, _p, key): Promise<AfterCommit[]> {
      const store = scheduleStore(tx)
      const row = await store.byConfigName(key)
      if (row === null) return []
      await store.delete(row.id)
      return [() => announceRemoved(ctx, row)]
    },
  }
}
