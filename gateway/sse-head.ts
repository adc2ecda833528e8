import type { HttpResponse } from 'uWebSockets.js'
import type { ResponseState } from './http.ts'

/** Writes the `200 text/event-stream` status and headers of a stream relaying `channelId` (inside a cork). */
export function writeSseHead(
  res: HttpResponse,
  rstate: ResponseState,
  channelId: string,
  extraHeaders: Record<string, string>,
): void {
  res.writeStatus('200 OK')
  res.writeHeader('x-request-id', rstate.requestId)
  for (const [k, v] of rstate.headers) res.writeHeader(k, v)
  for (const k in extraHeaders) res.writeHeader(k, extraHeaders[k] as string)
  res.writeHeader('content-type', 'text/event-stream; charset=utf-8')
  res.writeHeader('cache-control', 'no-cache')
  res.writeHeader('x-accel-buffering', 'no')
  res.writeHeader('x-channel-id', channelId)
}
