import { Health, SystemActors } from '../../schemas/system.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * The operators' routes about the platform itself: `/health`, which the gateway answers itself
 * (listed so the documents describe it), and the view of the actor shards (admin).
 */
export const SYSTEM_ROUTES = {
  health: defineRoute({
    id: 'system.health',
    method: 'GET',
    path: '/health',
    surface: 'runtime',
    summary: 'Liveness of this gateway process',
    tags: ['System'],
    auth: false,
    target: 'local',
    response: Health,
  }),
  actors: defineRoute({
    id: 'system.actors',
    method: 'GET',
    path: '/api/v1/system/actors',
    surface: 'management',
    summary: 'Actor types, their partitions, the host owning each (lease age, fence) and mailbox backlogs (admin)',
    tags: ['System'],
    auth: true,
    target: 'rpc',
    response: SystemActors,
    errors: [403],
    permission: 'platform.system.read:all',
  }),
}

export function systemRoutes(): RouteDef[] {
  return Object.values(SYSTEM_ROUTES)
}
