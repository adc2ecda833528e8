import {
  ActorHostDrain,
  ActorHostParams,
  Health,
  SystemActorHosts,
  SystemActors,
  SystemHealth,
} from '../../schemas/system.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * The operators' routes about the platform itself: `/health`, which the gateway answers itself
 * (listed so the documents describe it), the platform's health (services, host, warnings), the view of the actor shards and their hosts, and draining
 * a host (admin).
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
  report: defineRoute({
    id: 'system.health.report',
    method: 'GET',
    path: '/api/v1/system/health',
    surface: 'management',
    summary:
      "The platform's services (NATS, Postgres, job pools, actor hosts, sandboxes, …) with status, health, uptime, CPU and memory, this host's CPU, memory and disk, and warnings by level (admin)",
    tags: ['System'],
    auth: true,
    target: 'rpc',
    response: SystemHealth,
    errors: [403],
    permission: 'platform.system.read:all',
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
  actorHosts: defineRoute({
    id: 'system.actors.hosts',
    method: 'GET',
    path: '/api/v1/system/actors/hosts',
    surface: 'management',
    summary:
      'Actor hosts (active, draining, drained, gone) and the partitions each owns, with backlog and oldest message age (admin)',
    tags: ['System'],
    auth: true,
    target: 'rpc',
    response: SystemActorHosts,
    errors: [403],
    permission: 'platform.system.read:all',
  }),
  drainHost: defineRoute({
    id: 'system.actors.drain',
    method: 'POST',
    path: '/api/v1/system/actors/hosts/{node_id}/drain',
    surface: 'management',
    summary:
      'Drain an actor host: it acquires nothing more and hands its partitions to the other hosts one by one, each after its turns in progress (admin)',
    tags: ['System'],
    auth: true,
    target: 'rpc',
    params: ActorHostParams,
    response: ActorHostDrain,
    errors: [403, 404, 409],
    permission: 'platform.system.update:all',
  }),
  undrainHost: defineRoute({
    id: 'system.actors.undrain',
    method: 'POST',
    path: '/api/v1/system/actors/hosts/{node_id}/undrain',
    surface: 'management',
    summary: 'Cancel a drain: the host takes its share of the partitions again (admin)',
    tags: ['System'],
    auth: true,
    target: 'rpc',
    params: ActorHostParams,
    response: ActorHostDrain,
    errors: [403, 404],
    permission: 'platform.system.update:all',
  }),
}

export function systemRoutes(): RouteDef[] {
  return Object.values(SYSTEM_ROUTES)
}
