import { chatProtocol } from './chat.ts'
import { poolProtocol } from './pool.ts'
import { scheduleProtocol } from './schedule.ts'
import { dbTriggerProtocol } from './db-trigger.ts'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'

/*
 * The protocols of every actor type a host runs (the features' `actors`), without the behaviours:
 * what the operators' view (`GET /api/v1/system/actors`, src/system/actors-view.ts) lists. Keep in
 * step with ACTOR_FACTORIES in src/features.ts (tests/triggers/cron.test.ts checks it).
 */
export const ACTOR_PROTOCOLS: readonly ActorProtocol[] = [
  chatProtocol,
  scheduleProtocol,
  dbTriggerProtocol,
  poolProtocol,
]
