import { Type as T } from '@sinclair/typebox'

/* Discovery: what the caller can see, optionally narrowed to an application's exposed namespaces. */
export const DISCOVERY_TYPES = ['agents', 'functions', 'skills', 'collections', 'templates'] as const

export const DiscoveryParams = T.Object(
  { type: T.Union(DISCOVERY_TYPES.map((t) => T.Literal(t))) },
  { additionalProperties: false },
)

export const DiscoveryQuery = T.Object(
  {
    app: T.Optional(
      T.String({
        maxLength: 127,
        description: 'application manifest `<namespace>/<name>` (or the X-Application header)',
      }),
    ),
  },
  { additionalProperties: false },
)

/** One discovered resource: its record as the management API returns it (fields differ per kind). */
export const DiscoveredResource = T.Object(
  { id: T.String(), namespace: T.String(), name: T.String() },
  { additionalProperties: true, title: 'DiscoveredResource' },
)
