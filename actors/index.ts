import { chatActorFactory } from './chat/actor.ts'
import { poolActorFactory } from './pool/actor.ts'
import { scheduleActorFactory } from './schedule/actor.ts'
import { dbTriggerActorFactory } from './db-trigger/actor.ts'
import type { Actor, ActorFactory, ActorPlatform } from './runtime/define-actor.ts'

/*
 * The actor types an actor host runs, one line each (as `src/kinds/index.ts` lists resource
 * kinds). Their protocols are listed in `protocols/index.ts` (what the operators' view reads).
 */
export const ACTOR_FACTORIES: readonly ActorFactory[] = [
  chatActorFactory,
  scheduleActorFactory,
  dbTriggerActorFactory,
  poolActorFactory,
]

/** Builds every listed actor for a host process. */
export async function buildActors(p: ActorPlatform): Promise<Actor[]> {
  return Promise.all(ACTOR_FACTORIES.map((f) => f(p)))
}
