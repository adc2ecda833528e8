import { bind, type BoundRoute } from '../api/bind.ts'
import { badRequest } from '../kernel/errors.ts'
import { streamReply } from '../streaming/channel.ts'
import type { EventRelays } from './relay.ts'
import { EVENTS_ROUTES as R } from './routes.ts'

/* `events.stream` bound: a relay on the gateway's fresh channel, answered as a stream. */
export function eventsHandlers(relays: EventRelays): BoundRoute[] {
  return [
    bind(R.eventsStream, async ({ principal, query, request }) => {
      const channel = request.streamChannelId
      if (channel === undefined) throw badRequest('this route streams: call it through the gateway')
      relays.start(principal, request.caller, query.filter ?? '>', channel)
      return streamReply(channel)
    }),
  ]
}
