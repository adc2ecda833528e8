import { chatProtocol } from './chat.ts'
import { poolProtocol } from './pool.ts'
import { scheduleProtocol } from './schedule.ts'
import { dbTriggerProtocol } from './db-trigger.ts'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'

/*
 * The protocols of every actor type `index.ts` runs, without the implementations: what the
 * operators' view (`GET /api/v1/system/actors`, src/schedules/actors-admin.ts) lists. Keep in step
 * with ACTOR_FACTORIES (tests/triggers/schedules.test.ts checks it).
 */
export const ACTOR_PROTOCOLS: readonly ActorProtocol[] = [
  chatProtocol,
  scheduleProtocol,
  dbTriggerProtocol,
  poolProtocol,
]
