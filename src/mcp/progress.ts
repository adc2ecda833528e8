import type { JetStreamClient } from '@nats-io/jetstream'
import type { Logger } from '../kernel/log.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { publishStreamEvent, publishStreamEventNoAck } from '../streaming/channel.ts'
import { RPC_ERROR, rpcError } from './jsonrpc.ts'

/*
 * A tools/call that asked for progress (`params._meta.progressToken`) is answered as an SSE stream
 * (the gateway relays the channel in the `mcp` format): `notifications/progress` every
 * MCP_PROGRESS_SECONDS while the call runs, then the JSON-RPC response as the terminal `done`
 * event, which ends the stream. The platform cannot see inside a function's or a turn's work, so
 * progress counts the seconds elapsed (no `total`): it tells the client the call is alive, which
 * is what lets a client keep waiting past its request timeout (the SDK's resetTimeoutOnProgress).
 */
export interface ProgressDeps {
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  log: Logger
  intervalMs: number
}

export function streamWithProgress(
  d: ProgressDeps,
  channel: string,
  progressToken: string | number,
  what: string,
  /** The JSON-RPC response; expected never to fail (a failure is answered as an internal error). */
  respond: () => Promise<unknown>,
): void {
  const started = performance.now()
  let ticks = 0
  const tick = (): void => {
    const seconds = Math.round((performance.now() - started) / 100) / 10
    publishStreamEventNoAck(d.nc, d.names, channel, {
      event: 'progress',
      data: {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken, progress: ++ticks, message: `${what}: running for ${String(seconds)} s` },
      },
    })
  }
  const timer = setInterval(tick, d.intervalMs)
  const finish = async (): Promise<void> => {
    let response: unknown
    try {
      response = await respond()
    } catch (err) {
      d.log.warn({ err, channel }, 'mcp tool call failed')
      response = rpcError(null, RPC_ERROR.internal, 'internal error')
    } finally {
      clearInterval(timer)
    }
    // acknowledged: it comes after the progress events of this connection, and a failing stream shows here
    await publishStreamEvent(d.js, d.names, channel, { event: 'done', data: response })
  }
  finish().catch((err: unknown) => d.log.warn({ err, channel }, 'mcp: could not end a progress stream'))
}
