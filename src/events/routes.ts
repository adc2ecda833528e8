import { EventsStreamQuery } from '../../schemas/events.ts'
import { ExecutionEvent } from '../../schemas/job.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* The execution events of the NATS stream EVENTS, followed over HTTP. */
export const EVENTS_ROUTES = {
  eventsStream: defineRoute({
    id: 'events.stream',
    method: 'GET',
    path: '/api/v1/events/stream',
    surface: 'management',
    tags: ['Events'],
    auth: true,
    target: 'rpc',
    summary:
      'Follow execution events live as Server-Sent Events: `execution` (the event, schema platform.execution.v1) for each state change of an execution the caller may see (its own, those of resources it may read; admins all), `heartbeat` every 30 s',
    query: EventsStreamQuery,
    response: ExecutionEvent,
    stream: { format: 'platform' },
    errors: [401, 422],
  }),
}

export function eventsRoutes(): RouteDef[] {
  return Object.values(EVENTS_ROUTES)
}
