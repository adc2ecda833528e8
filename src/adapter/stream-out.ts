import type { RequestMeta } from '../api/bind.ts'
import { publishStreamEvent, publishStreamEventNoAck } from '../streaming/channel.ts'
import type { AdapterContext } from './context.ts'
import { invalidRequest, toAdapterError } from './wire.ts'

/* Events on the client's stream channel (the gateway relays them as SSE, format `openai`). */
export const publishChunk = (c: AdapterContext, channel: string, data: unknown) =>
  publishStreamEventNoAck(c.d.nc, c.d.names, channel, { event: 'chunk', data })
export const publishEnd = (c: AdapterContext, channel: string) =>
  publishStreamEvent(c.d.js, c.d.names, channel, { event: 'done', data: null })
export const publishError = (c: AdapterContext, channel: string, err: unknown) =>
  publishStreamEvent(c.d.js, c.d.names, channel, { event: 'error', data: toAdapterError(err).body() })

/** The gateway's stream channel of this request; 400 when the route was not called through the gateway. */
export const streamChannel = (req: RequestMeta): string => {
  if (req.streamChannelId === undefined)
    throw invalidRequest(
      'stream: true needs the gateway stream channel (call this route through the gateway)',
      'stream',
    )
  return req.streamChannelId
}
