import type { Config } from '../kernel/config.ts'

/*
 * SHARED_POOL_RESERVE: function-pool slots of one worker process kept for nested calls. A function
 * that calls another one synchronously (through the API, with its execution token) holds its slot
 * while it waits; when top-level jobs hold every slot, their nested calls find none and every
 * chain waits until it times out. With a reserve of R, top-level jobs (depth 0) take at most
 * `slots - R` slots of the process: a top-level job over that goes back to the queue unclaimed
 * (nak with a delay, like the per-user share), so R slots stay free for jobs of depth >= 1.
 * A chain of depth D needs D - 1 reserved slots to be safe whatever else runs, hence "full safety
 * at MAX_EXECUTION_DEPTH minus 1". The gate is per process, as the slots it protects are.
 */
export interface TopLevelGate {
  readonly cap: number
  tryEnter(): boolean
  leave(): void
  running(): number
}

/** Slots top-level jobs may take in this process, or undefined when nothing is reserved. */
export function topLevelCap(
  config: Pick<Config, 'SHARED_POOL_RESERVE' | 'QUEUE_FUNCTION_CONCURRENCY'>,
  replicas: number,
): number | undefined {
  if (config.SHARED_POOL_RESERVE === 0) return undefined
  // a reserve of every slot would starve top-level jobs for ever: one slot stays theirs
  return Math.max(1, replicas * config.QUEUE_FUNCTION_CONCURRENCY - config.SHARED_POOL_RESERVE)
}

export function createTopLevelGate(cap: number): TopLevelGate {
  let n = 0
  return {
    cap,
    tryEnter() {
      if (n >= cap) return false
      n++
      return true
    },
    leave() {
      n = Math.max(0, n - 1)
    },
    running: () => n,
  }
}
