import type { AnyActor } from './runtime/define-actor.ts'

/*
 * The actor kinds an actor host runs. Chat, trigger and sandbox actors register here in their own
 * modules (issues of their own); until then a host only keeps its heartbeat.
 */
const registry: AnyActor[] = []

export function registerActor(def: AnyActor): void {
  if (registry.some((a) => a.type === def.type)) throw new Error(`actor type ${def.type} registered twice`)
  registry.push(def)
}

export const registeredActors = (): AnyActor[] => [...registry]
