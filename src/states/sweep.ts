import type { Logger } from '../kernel/log.ts'
import type { StateService } from './service.ts'

/**
 * Deletes expired entries every `seconds` (they are already invisible: every read filters on
 * expires_at; the sweep only reclaims the rows). Every resource-service replica sweeps; a delete
 * is idempotent, so no leader is needed. Returns the stop function.
 */
async function sweepOnce(states: StateService, log: Logger): Promise<void> {
  try {
    const n = await states.sweep()
    if (n > 0) log.debug({ deleted: n }, 'expired states swept')
  } catch (err) {
    log.warn({ err }, 'state sweep failed')
  }
}

export function startStateSweep(states: StateService, seconds: number, log: Logger): () => Promise<void> {
  let running: Promise<void> | null = null
  const timer = setInterval(() => {
    if (running !== null) return
    running = sweepOnce(states, log).finally(() => {
      running = null
    })
  }, seconds * 1000)
  timer.unref()
  return async () => {
    clearInterval(timer)
    await running
  }
}
