import type { Logger } from '../kernel/log.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { SupervisedService } from '../platform/supervisor.ts'

/*
 * What a started platform has to undo, in reverse order, within one time budget: with NATS or
 * Postgres down a drain or a final write can wait forever, and Ctrl-C must not. The local servers
 * stop last, after the steps that still talk to them, whatever those did.
 */
export const STOP_BUDGET_MS = 5_000

async function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      p,
      new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), Math.max(0, ms)))),
    ])
  } finally {
    clearTimeout(timer)
  }
}

export interface Lifecycle {
  /** Single-node mode's own nats-server and Postgres, each restarted when it dies. */
  local: { nats?: SupervisedService; postgres?: SupervisedService }
  /** Registers a shutdown step (run in reverse order of registration). */
  onStop(step: () => Promise<void>): void
  /** The platform's NATS connection, closed after the steps even when they ran out of time. */
  nats: NatsConnection | undefined
  close(): Promise<void>
  /** Last resort of a forced exit: signals the local servers to stop and returns at once. */
  abort(): void
}

export function createLifecycle(log: Logger): Lifecycle {
  const steps: (() => Promise<void>)[] = []
  const life: Lifecycle = {
    local: {},
    nats: undefined,
    onStop: (step) => void steps.push(step),
    async close() {
      const deadline = Date.now() + STOP_BUDGET_MS
      const pending = [...steps].reverse()
      steps.length = 0
      while (pending.length > 0) {
        const fn = pending.shift() as () => Promise<void>
        const r = await within(fn(), deadline - Date.now()).catch((err: unknown) =>
          log.warn({ err }, 'shutdown step failed'),
        )
        if (r === 'timeout') {
          log.warn({ budgetMs: STOP_BUDGET_MS }, 'shutdown steps took too long: stopping the rest without waiting')
          // Each later step still runs, unawaited: skipping them would leave their timers, pools and
          // subscriptions alive (a process embedding the platform, a test, would never exit).
          for (const rest of pending.splice(0))
            void Promise.resolve()
              .then(rest)
              .catch((err: unknown) => log.warn({ err }, 'shutdown step failed'))
          break
        }
      }
      if (life.nats !== undefined && !life.nats.isClosed()) await life.nats.close().catch(() => undefined)
      for (const svc of [life.local.postgres, life.local.nats])
        await svc?.stop().catch((err: unknown) => log.warn({ err }, 'stopping a local server failed'))
      life.local = {}
    },
    abort() {
      life.local.postgres?.signal()
      life.local.nats?.signal()
    },
  }
  return life
}
