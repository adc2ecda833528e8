import type { JetStreamClient } from '@nats-io/jetstream'
import type { Emit } from './turn.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { isTerminalEvent, publishStreamEvent, publishStreamEventNoAck } from '../streaming/channel.ts'

/**
 * How a turn's events reach its stream channel: deltas without a PubAck (ordered on one
 * connection, cheap per token), the terminal event acknowledged (a client must not miss the end).
 * A turn without a channel (synchronous send, sub-agent) emits nothing.
 */
export function chatStreamEmitter(d: {
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
}): (channelId: string | null) => Emit {
  return (channelId) =>
    channelId === null
      ? async () => undefined
      : async (event, data) => {
          if (isTerminalEvent(event)) await publishStreamEvent(d.js, d.names, channelId, { event, data })
          else publishStreamEventNoAck(d.nc, d.names, channelId, { event, data })
        }
}
