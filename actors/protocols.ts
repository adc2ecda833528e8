import { chatProtocol } from './chat/protocol.ts'
import { poolProtocol } from './pool/protocol.ts'
import { scheduleProtocol } from './schedule/protocol.ts'
import { dbTriggerProtocol } from './db-trigger/protocol.ts'
import type { ActorProtocol } from './runtime/protocol.ts'

/*
 * The protocols of every actor type a host runs (the features' `actors`), without the
 * implementations: what the operators' view (`GET /api/v1/system/actors`,
 * src/schedules/actors-admin.ts) lists. Keep in step with ACTOR_FACTORIES in src/features.ts
 * (tests/triggers/cron.test.ts checks it).
 */
export const ACTOR_PROTOCOLS: readonly ActorProtocol[] = [
  chatProtocol,
  scheduleProtocol,
  dbTriggerProtocol,
  poolProtocol,
]
