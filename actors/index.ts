import { chatActorFactory } from './chat/actor.ts'
import { poolActorFactory } from './pool/actor.ts'
import { scheduleActorFactory } from './schedule/actor.ts'
import { dbTriggerActorFactory } from './db-trigger/actor.ts'
import type { Actor, ActorFactory, ActorPlatform } from './runtime/define-actor.ts'
import type { LocalJobs } from '../src/jobs/local-run.ts'

/*
 * The actor types an actor host runs, one line each (as `src/kinds/index.ts` lists resource
 * kinds). Their protocols are listed in `protocols.ts` (what the operators' view reads).
 */
/** What the actors get beyond the platform handles: the job workers of this process, when it runs the workers role too (jobs an actor starts may run here directly). */
export interface ActorExtras {
  localJobs?: LocalJobs
}

export const ACTOR_FACTORIES: readonly ActorFactory<ActorExtras>[] = [
  chatActorFactory,
  scheduleActorFactory,
  dbTriggerActorFactory,
  poolActorFactory,
]

/** Builds every listed actor for a host process. */
export async function buildActors(p: ActorPlatform & ActorExtras): Promise<Actor[]> {
  return Promise.all(ACTOR_FACTORIES.map((f) => f(p)))
}
