import { Type as T } from '@sinclair/typebox'
import {
  Schedule,
  ScheduleCreateBody,
  ScheduleDetail,
  ScheduleGetQuery,
  ScheduleListQuery,
  ScheduleOwnerQuery,
  ScheduleParams,
  ScheduleUpdateBody,
} from '../../schemas/triggers.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * Schedules: a name is unique per user, so `/api/v1/schedules/{name}` is the
 * caller's own schedule; `?owner_id=` names another user's (admins, `platform.schedules.*:all`).
 */
const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['Schedules']

const List = T.Object(
  {
    ...ScheduleListQuery.properties,
    all: T.Optional(T.Boolean({ description: "admins: every user's schedules (default: your own)" })),
  },
  { additionalProperties: false },
)

export const SCHEDULE_ROUTES = {
  list: defineRoute({
    ...m,
    tags,
    id: 'schedules.list',
    method: 'GET',
    path: '/api/v1/schedules',
    summary: 'Your schedules (`all=true`: every schedule, admins)',
    query: List,
    response: T.Array(Schedule),
  }),
  create: defineRoute({
    ...m,
    tags,
    id: 'schedules.create',
    method: 'POST',
    path: '/api/v1/schedules',
    summary:
      'Create a cron schedule that runs a function (with input_data) or sends `content` to an agent in a new chat; you must be allowed to run the target',
    status: 201,
    body: ScheduleCreateBody,
    response: Schedule,
    errors: [403, 404, 409],
  }),
  get: defineRoute({
    ...m,
    tags,
    id: 'schedules.get',
    method: 'GET',
    path: '/api/v1/schedules/{name}',
    summary: 'A schedule with its next run and its recent runs (status from the job)',
    params: ScheduleParams,
    query: ScheduleGetQuery,
    response: ScheduleDetail,
    errors: [404],
  }),
  update: defineRoute({
    ...m,
    tags,
    id: 'schedules.update',
    method: 'PATCH',
    path: '/api/v1/schedules/{name}',
    summary: 'Change a schedule (the schedule actor is told at once)',
    params: ScheduleParams,
    query: ScheduleOwnerQuery,
    body: ScheduleUpdateBody,
    response: Schedule,
    errors: [404],
  }),
  delete: defineRoute({
    ...m,
    tags,
    id: 'schedules.delete',
    method: 'DELETE',
    path: '/api/v1/schedules/{name}',
    summary: 'Delete a schedule (its actor stops firing)',
    params: ScheduleParams,
    query: ScheduleOwnerQuery,
    status: 204,
    errors: [404],
  }),
}

export function scheduleRoutes(): RouteDef[] {
  return Object.values(SCHEDULE_ROUTES)
}
