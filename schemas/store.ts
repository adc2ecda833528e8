import { Type as T, type Static } from '@sinclair/typebox'
import { Name, Namespace, Nullable, Timestamp, Uuid } from './common.ts'

/*
 * Stores (persistent key-value state, docs/data.md#stores-and-states) and the
 * state entries they hold. A store is a resource kind (`/api/v1/stores`); its entries are runtime
 * data under `/stores/{namespace}/{name}/states`.
 */
export const Visibility = T.Union([T.Literal('private'), T.Literal('shared')], {
  description:
    "`private`: its owner and whoever may manage the store; `shared`: everyone who may read the store's states",
})
export type Visibility = Static<typeof Visibility>

export const StoreSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000 }),
    schema: T.Union([T.Record(T.String(), T.Unknown()), T.Null()], {
      default: null,
      description: 'a JSON Schema every value must match; null = any JSON value',
    }),
    strict: T.Boolean({
      default: true,
      description:
        'with a `schema`: true refuses a value that does not match it (422 `state.invalid_value`); false stores it and answers the issues as `warnings`',
    }),
    default_visibility: T.Union([T.Literal('private'), T.Literal('shared')], {
      default: 'private',
      description: 'visibility of an entry written without one',
    }),
    encrypted: T.Boolean({
      default: false,
      description:
        'values encrypted at rest (AES-256-GCM, bound to store and key); keys, tags and descriptions stay searchable in clear',
    }),
  },
  { additionalProperties: false },
)
/** Keys: one path segment, so `/states/{key}` addresses it without escaping. */
export const KEY_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,199}$'
export const StateKey = T.String({
  pattern: KEY_PATTERN,
  maxLength: 200,
  description: 'letters, digits and _ . : @ - (not starting with . : @ -); at most 200 characters',
})
export const Tag = T.String({
  pattern: '^[A-Za-z0-9_.:-]{1,64}$',
  description: 'letters, digits and _ . : -; at most 64 characters',
})
const Tags = T.Array(Tag, { maxItems: 32, uniqueItems: true })
const Description = T.String({ maxLength: 2000 })
const ExpiresAt = Nullable(
  T.String({
    format: 'date-time',
    description: 'the entry disappears at this instant (must lie in the future); null = never',
  }),
)

export const StateEntry = T.Object(
  {
    id: Uuid,
    store: T.String({ description: '`<namespace>/<name>`' }),
    key: T.String(),
    value: T.Unknown({ description: 'any JSON value' }),
    visibility: Visibility,
    description: T.String(),
    tags: T.Array(T.String()),
    owner_id: Nullable(Uuid),
    expires_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
    warnings: T.Optional(
      T.Array(T.Object({ path: T.String(), message: T.String() }), {
        description: 'schema issues of a value a non-strict store accepted',
      }),
    ),
  },
  { title: 'StateEntry' },
)
export type StateEntry = Static<typeof StateEntry>

export const StoreParams = T.Object({ namespace: Namespace, name: Name })
export const StateParams = T.Object({ namespace: Namespace, name: Name, key: StateKey })

export const StateCreateBody = T.Object(
  {
    key: StateKey,
    value: T.Unknown({ description: 'any JSON value (validated against the store schema)' }),
    visibility: T.Optional(Visibility),
    description: T.Optional(Description),
    tags: T.Optional(Tags),
    expires_at: T.Optional(ExpiresAt),
  },
  { additionalProperties: false, title: 'StateCreate' },
)
export type StateCreateBody = Static<typeof StateCreateBody>

/** PUT: creates the key when absent (then `value` is required), otherwise changes the fields given. */
export const StatePutBody = T.Object(
  {
    value: T.Optional(T.Unknown()),
    visibility: T.Optional(Visibility),
    description: T.Optional(Description),
    tags: T.Optional(Tags),
    expires_at: T.Optional(ExpiresAt),
  },
  { additionalProperties: false, title: 'StatePut' },
)
export type StatePutBody = Static<typeof StatePutBody>

export const StateListQuery = T.Object(
  {
    search: T.Optional(T.String({ maxLength: 200, pattern: '^[A-Za-z0-9_.:@-]*$', description: 'key prefix' })),
    tags: T.Optional(
      T.String({ maxLength: 2200, description: 'comma-separated tags; an entry must carry all of them' }),
    ),
    owner: T.Optional(T.Union([Uuid, T.Literal('me')], { description: "the owner's user id, or `me`" })),
    limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    offset: T.Optional(T.Integer({ minimum: 0, default: 0 })),
  },
  { additionalProperties: false },
)
export type StateListQuery = Static<typeof StateListQuery>

/** One row of `states` (migration 0009): the value in clear (`value`) or sealed (`value_sealed`). */
export const StateRowShape = T.Object(
  {
    id: T.String(),
    key: T.String(),
    value: T.Unknown(),
    value_sealed: Nullable(T.String()),
    visibility: Visibility,
    description: T.String(),
    tags: T.Array(T.String()),
    owner_id: Nullable(T.String()),
    expires_at: Nullable(T.String()),
    created_at: T.String(),
    updated_at: T.String(),
    total: T.Optional(T.Number()),
  },
  { title: 'state' },
)

/**
 * `states.changed` (core NATS): a committed write of a state entry, from process `o`, of key `k`
 * in store `s` (store id); every process's entry cache drops that key (src/states/entry-cache.ts).
 * Without `s` and `k`: every entry (a write made outside the platform, `announceOutsideStateWrite`).
 */
export const StateChange = T.Object(
  { o: T.String(), s: T.Optional(T.String()), k: T.Optional(T.String()) },
  { title: 'StateChange' },
)
