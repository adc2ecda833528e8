import type { Logger } from '../kernel/log.ts'
import type { LocalService } from './local-services.ts'

/*
 * Keeps a single-node child server (nats-server, Postgres) running: when it ends without stop()
 * it is started again, on the same port so clients reconnect to the URL they know, after a backoff
 * that doubles on each failed attempt (a server that crashes right away is not restarted in a
 * tight loop) and resets once a run lasted `stableMs`. Each restart is logged.
 */
export type SupervisedState = 'running' | 'restarting' | 'stopped'

export interface SupervisedService {
  readonly url: string
  /** The server's Unix socket URL, when it has one (the same on every restart: same directory and port). */
  readonly socketUrl?: string
  /** The current server process (changes on restart). */
  pid(): number
  state(): SupervisedState
  /** Restarts so far (a restart that failed and was retried counts once). */
  restarts(): number
  /** Stops supervising, then the server; waits for it to end. */
  stop(): Promise<void>
  /** Forced exit: sends the stop signal to the current server and returns at once. */
  signal(): void
}

export interface SuperviseOptions {
  name: string
  log: Logger
  /** Starts the server; `port` is set on a restart and must be used as is. */
  start(port: number | undefined): Promise<LocalService>
  minBackoffMs?: number
  maxBackoffMs?: number
  stableMs?: number
}

export async function superviseService(o: SuperviseOptions): Promise<SupervisedService> {
  const minBackoff = o.minBackoffMs ?? 250
  const maxBackoff = o.maxBackoffMs ?? 10_000
  const stableMs = o.stableMs ?? 30_000
  let current = await o.start(undefined)
  const url = current.url
  const port = Number(new URL(url).port)
  let state: SupervisedState = 'running'
  let restarts = 0
  let backoff = minBackoff
  let startedAt = Date.now()
  let wake: (() => void) | undefined
  let restarting: Promise<void> = Promise.resolve()
  // a function, so the checks after each await read the state as stop() left it
  const stopped = () => state === 'stopped'

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms)
      wake = () => {
        clearTimeout(timer)
        resolve()
      }
    })

  const restart = async (how: string): Promise<void> => {
    state = 'restarting'
    restarts++
    if (Date.now() - startedAt >= stableMs) backoff = minBackoff
    o.log.error(
      { server: o.name, exit: how, pid: current.pid, restartInMs: backoff, restarts },
      `${o.name} ended unexpectedly: restarting it`,
    )
    for (;;) {
      await sleep(backoff)
      backoff = Math.min(maxBackoff, backoff * 2)
      if (stopped()) return
      try {
        const next = await o.start(port)
        if (stopped()) {
          await next.stop()
          return
        }
        current = next
        startedAt = Date.now()
        state = 'running'
        o.log.warn({ server: o.name, pid: next.pid, restarts }, `${o.name} restarted`)
        watch(next)
        return
      } catch (err) {
        o.log.error({ server: o.name, err, retryInMs: backoff }, `${o.name} restart failed: retrying`)
      }
    }
  }

  const watch = (svc: LocalService) => {
    void (async () => {
      const how = await svc.exited
      if (how === undefined || state !== 'running' || svc !== current) return
      restarting = restart(how)
    })()
  }
  watch(current)

  return {
    url,
    ...(current.socketUrl === undefined ? {} : { socketUrl: current.socketUrl }),
    pid: () => current.pid,
    state: () => state,
    restarts: () => restarts,
    async stop() {
      state = 'stopped'
      wake?.()
      await restarting
      await current.stop()
    },
    signal() {
      state = 'stopped'
      current.signal?.()
    },
  }
}
