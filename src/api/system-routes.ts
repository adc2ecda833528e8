import { Health } from '../../schemas/system.ts'
import type { RouteDef } from './route.ts'

/** Routes the gateway answers itself, listed so the documents describe them. */
export function systemRoutes(): RouteDef[] {
  return [
    {
      id: 'system.health',
      method: 'GET',
      path: '/health',
      surface: 'runtime',
      summary: 'Liveness of this gateway process',
      tags: ['System'],
      auth: false,
      target: 'local',
      response: Health,
    },
  ]
}
