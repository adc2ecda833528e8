import { Type as T, type Static } from '@sinclair/typebox'

/* `GET /api/v1/events/stream`: execution events as Server-Sent Events. */

/**
 * A NATS subject filter below `events.execution.`: up to three tokens (namespace, name, status),
 * each a name or `*`, optionally ending with `>`; or `>` alone (every execution).
 */
export const EVENTS_FILTER_PATTERN = '^(>|([A-Za-z0-9_-]+|\\*)(\\.([A-Za-z0-9_-]+|\\*)){0,2}(\\.>)?)$'

export const EventsStreamQuery = T.Object(
  {
    filter: T.Optional(
      T.String({
        maxLength: 200,
        pattern: EVENTS_FILTER_PATTERN,
        description:
          'subject filter after `events.execution.`: `<namespace>.<name>.<status>`, `*` one token, `>` the rest (default `>`)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type EventsStreamQuery = Static<typeof EventsStreamQuery>
