/*
 * What a server child tells the bench over the IPC channel, and how it shuts down. A child stops
 * cleanly on SIGTERM / SIGINT and also when the IPC channel closes, so a bench that dies (even by
 * kill -9) does not leave servers behind.
 */
export interface ReadyInfo {
  port: number
  /** Access token of the superadmin (platform children). */
  token?: string
  natsUrl?: string
  databaseUrl?: string
}

export type ChildMessage = { type: 'ready'; info: ReadyInfo } | { type: 'failed'; message: string }

export function reportReady(info: ReadyInfo): void {
  process.send?.({ type: 'ready', info } satisfies ChildMessage)
}

export function reportFailure(err: unknown): void {
  const message = err instanceof Error ? (err.stack ?? err.message) : String(err)
  process.stderr.write(`${message}\n`)
  if (process.send !== undefined)
    process.send({ type: 'failed', message } satisfies ChildMessage, () => process.exit(1))
  else process.exit(1)
}

export function onShutdown(close: () => Promise<void> | void): void {
  let stopping = false
  const stop = () => {
    if (stopping) return
    stopping = true
    setTimeout(() => process.exit(1), 20_000).unref()
    Promise.resolve()
      .then(close)
      .then(
        () => process.exit(0),
        (err: unknown) => {
          process.stderr.write(`shutdown failed: ${String(err)}\n`)
          process.exit(1)
        },
      )
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  process.on('disconnect', stop)
}
