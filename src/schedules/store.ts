import { Type as T } from '@sinclair/typebox'
import type { CommonQueryMethods } from 'slonik'
import { Schedule } from '../../schemas/triggers.ts'
import { sql } from '../platform/db.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'

/* The `schedules` and `schedule_runs` tables (migration 0012). */
const ScheduleRow = rowType(Schedule)
const columns = sql.unsafe`id, name, owner_id, schedule_type, target_namespace, target_name, cron_expression, timezone, input_data, content, description, is_active, version, created_at, updated_at`

/** A row with who manages it (config, a package, or null: made by hand) and the config body's checksum. */
const ManagedRow = rowType(
  T.Object(
    { ...Schedule.properties, managed_by: T.Union([T.String(), T.Null()]), checksum: T.Union([T.String(), T.Null()]) },
    { title: 'managed schedule' },
  ),
)
export type ManagedScheduleRow = typeof ManagedRow.schema.static

/** Who manages a row written by config or a package; null (an API write) detaches it. */
export interface Managed {
  by: string
  checksum: string
}

/*
 * Config names a schedule by its name alone (a file names no owner): of the schedules of that
 * name, the one config or a package manages (at most one: migration 0034), else the oldest.
 */
const configOrder = sql.unsafe`order by name, (managed_by is not null) desc, created_at, id`

const RunRow = rowType(
  T.Object(
    {
      tick: T.String(),
      fired_at: T.String(),
      job_id: T.Union([T.String(), T.Null()]),
      chat_id: T.Union([T.String(), T.Null()]),
      outcome: T.String(),
      error: T.Union([T.String(), T.Null()]),
      job_status: T.Union([T.String(), T.Null()]),
      job_error: T.Union([T.String(), T.Null()]),
    },
    { title: 'schedule run' },
  ),
)

export interface ScheduleFields {
  schedule_type: string
  target_namespace: string
  target_name: string
  cron_expression: string
  timezone: string
  input_data: Record<string, unknown>
  content: string | null
  description: string
  is_active: boolean
}

export interface RunRecord {
  tick: string
  fired_at: string
  job_id: string | null
  chat_id: string | null
  status: string
  error: string | null
}

const json = (v: Record<string, unknown>) => sql.jsonb(JSON.parse(JSON.stringify(v)))

/** The pool, or the transaction of a config apply. */
type Q = Pick<CommonQueryMethods, 'any' | 'maybeOne' | 'query'>

export function scheduleStore(db: Q) {
  return {
    byName: (ownerId: string, name: string) =>
      maybeRow(
        db,
        ScheduleRow,
        sql.unsafe`select ${columns} from schedules where owner_id = ${ownerId}::uuid and name = ${name}`,
      ),
    byId: (id: string) =>
      maybeRow(db, ScheduleRow, sql.unsafe`select ${columns} from schedules where id = ${id}::uuid`),
    list: (ownerId: string | null, limit: number, offset: number) =>
      anyRows(
        db,
        ScheduleRow,
        sql.unsafe`select ${columns} from schedules ${ownerId === null ? sql.unsafe`` : sql.unsafe`where owner_id = ${ownerId}::uuid`} order by name, created_at limit ${limit} offset ${offset}`,
      ),
    all: () => anyRows(db, ScheduleRow, sql.unsafe`select ${columns} from schedules`),
    /** One row per name, as config addresses them (`configOrder`), with its manager and checksum. */
    allForConfig: () =>
      anyRows(
        db,
        ManagedRow,
        sql.unsafe`select distinct on (name) ${columns}, managed_by, checksum from schedules ${configOrder}`,
      ),
    /** The schedule config means by `name` (`configOrder`), or null. */
    byConfigName: (name: string) =>
      maybeRow(
        db,
        ScheduleRow,
        sql.unsafe`select ${columns} from schedules where name = ${name} ${configOrder} limit 1`,
      ),
    /** null when the owner already has a schedule of this name. `managed`: config's or a package's (null: made through the API). */
    create: (ownerId: string, name: string, f: ScheduleFields, managed: Managed | null = null) =>
      maybeRow(
        db,
        ScheduleRow,
        sql.unsafe`insert into schedules (name, owner_id, schedule_type, target_namespace, target_name, cron_expression, timezone, input_data, content, description, is_active, managed_by, checksum)
        values (${name}, ${ownerId}::uuid, ${f.schedule_type}, ${f.target_namespace}, ${f.target_name}, ${f.cron_expression}, ${f.timezone}, ${json(f.input_data)}, ${f.content}, ${f.description}, ${f.is_active},
          ${managed?.by ?? null}, ${managed?.checksum ?? null})
        on conflict (owner_id, name) do nothing returning ${columns}`,
      ),
    /** `managed`: null (an edit through the API) detaches the schedule from config or its package. */
    update: (id: string, f: ScheduleFields, managed: Managed | null = null) =>
      maybeRow(
        db,
        ScheduleRow,
        sql.unsafe`update schedules set schedule_type = ${f.schedule_type}, target_namespace = ${f.target_namespace}, target_name = ${f.target_name},
        cron_expression = ${f.cron_expression}, timezone = ${f.timezone}, input_data = ${json(f.input_data)}, content = ${f.content}, description = ${f.description},
        is_active = ${f.is_active}, managed_by = ${managed?.by ?? null}, checksum = ${managed?.checksum ?? null}, version = version + 1, updated_at = now()
        where id = ${id}::uuid returning ${columns}`,
      ),
    delete: (id: string) => db.query(sql.unsafe`delete from schedules where id = ${id}::uuid`),
    runs: async (id: string, limit: number): Promise<RunRecord[]> => {
      const rows = await anyRows(
        db,
        RunRow,
        sql.unsafe`select r.tick, r.fired_at, r.job_id, r.chat_id, r.outcome, r.error, e.status as job_status, e.error as job_error
        from schedule_runs r left join executions e on e.id = r.job_id where r.schedule_id = ${id}::uuid order by r.tick desc limit ${limit}`,
      )
      return rows.map((r) => ({
        tick: r.tick,
        fired_at: r.fired_at,
        job_id: r.job_id,
        chat_id: r.chat_id,
        // the job mirror writes `executions` shortly after the job's state changes: `queued` until then
        status: r.outcome === 'refused' ? 'refused' : (r.job_status ?? 'queued'),
        error: r.error ?? r.job_error,
      }))
    },
  }
}

export type ScheduleStore = ReturnType<typeof scheduleStore>
