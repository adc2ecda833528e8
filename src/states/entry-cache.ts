import { randomUUID } from 'node:crypto'
import { Type as T, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Nullable } from '../../schemas/common.ts'
import { StateChange, StateRowShape } from '../../schemas/store.ts'
import { AuthChangeCheck } from '../auth/auth-change.ts'
import { sql, type Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { maybeRow, rowType } from '../platform/typed-rows.ts'
import { followChanges, onConnectionGap } from '../platform/change-feed.ts'

/*
 * The state entries this process has read, in memory, kept coherent across processes over NATS
 * the way the resource rows are (src/resources/row-cache.ts): a warm `GET .../states/{key}`, a
 * `retrieve_state` tool call or a component's state read touches no Postgres.
 *
 * What is kept is the row as stored — the value's JSON text, or its ciphertext for an encrypted
 * store (decrypted per read, never kept in clear) — expired rows included: the reader checks
 * `expires_at` itself, so the sweep that deletes expired rows needs no announcement. Absent keys
 * are kept too (an insert announces itself like any write).
 *
 * After every committed write of an entry, the state service calls `changed`: the key is dropped
 * here at once (with any read of it in flight, which then answers its caller but keeps nothing),
 * published on `states.changed`, and the connection flushed before the write answers — so every
 * other process has dropped the key before the next request reaches it (the ordering argument
 * of row-cache.ts). A user deleted or changed (`auth.changed`) drops the entries it owns, since
 * deleting a user nulls their `owner_id` in Postgres without passing here. Everything is
 * forgotten when the NATS connection drops or comes back, and an entry is re-read after 60 s at
 * the latest (a bound for a change message missed some other way).
 *
 * One cache per database pool and process, shared by the routes, the agent tools and the
 * components' proxy (`stateCacheFor`); bounded by STATE_CACHE_BYTES, least recently read first out.
 */
/** The stored row (schemas/store.ts `StateRowShape`) with the value as its JSON text (null for an encrypted store's). */
export const CachedStateShape = T.Object(
  { ...T.Omit(StateRowShape, ['value', 'total']).properties, text: Nullable(T.String()) },
  { title: 'cached state' },
)
export type CachedState = Readonly<Static<typeof CachedStateShape>> & { readonly expiresMs: number | null }

export interface StateEntryCache {
  /** The stored row of `key` in the store (expired ones included: check `expiresMs`); null when absent. */
  row(storeId: string, key: string): Promise<CachedState | null>
  /** After a committed write of `key`: every process drops it before this resolves. */
  changed(storeId: string, key: string): Promise<void>
  /** What is held now (entries, bytes as counted against STATE_CACHE_BYTES). */
  size(): { entries: number; bytes: number }
}

const CachedRow = rowType(CachedStateShape)
const Change = TypeCompiler.Compile(StateChange)
/** Longest an entry is answered without hearing of it. */
const MAX_AGE_MS = 60_000
/** What an entry costs besides its value's text (the object, its strings, the map slot), roughly. */
const ENTRY_OVERHEAD = 400

async function query(db: Db, storeId: string, key: string): Promise<CachedState | null> {
  const row = await maybeRow(
    db,
    CachedRow,
    sql.unsafe`select id, key, value::text as text, value_sealed, visibility, description, tags, owner_id, expires_at, created_at, updated_at
      from states where store_id = ${storeId}::uuid and key = ${key}`,
  )
  if (row === null) return null
  Object.freeze(row.tags)
  return Object.freeze({ ...row, expiresMs: row.expires_at === null ? null : Date.parse(row.expires_at) })
}

/** No cache (STATE_CACHE_BYTES=0, or no NATS here): every read is a query. */
export const uncachedStates = (db: Db): StateEntryCache => ({
  row: (s, k) => query(db, s, k),
  changed: async () => undefined,
  size: () => ({ entries: 0, bytes: 0 }),
})

interface Held {
  row: CachedState | null
  bytes: number
  at: number
}

export function natsStateCache(d: { db: Db; nc: NatsConnection; names: NatsNames; maxBytes: number }): StateEntryCache {
  const { db, nc } = d
  const subject = d.names.subject('states.changed')
  const origin = randomUUID()
  // Map order is recency: a hit moves its entry to the end, eviction takes from the front.
  const held = new Map<string, Held>()
  const loading = new Map<string, Promise<CachedState | null>>()
  let bytes = 0
  // Bumped whenever more than one key is dropped at once: a read in flight from before keeps nothing.
  let epoch = 0
  let live = !nc.isClosed()
  const idOf = (storeId: string, key: string) => `${storeId}\u0000${key}` // keys never hold NUL (KEY_PATTERN)

  const drop = (id: string) => {
    const h = held.get(id)
    if (h !== undefined) {
      held.delete(id)
      bytes -= h.bytes
    }
    loading.delete(id)
  }
  const dropAll = () => {
    held.clear()
    loading.clear()
    bytes = 0
    epoch++
  }
  const keep = (id: string, row: CachedState | null) => {
    // a plain value's text counts twice: the state service keeps the rendered answer beside the
    // row while it is held (service.ts `Rendered`)
    const size =
      ENTRY_OVERHEAD +
      id.length +
      (row === null ? 0 : 2 * ((row.text?.length ?? 0) + row.description.length) + (row.value_sealed?.length ?? 0))
    if (size > d.maxBytes / 32) return
    drop(id)
    held.set(id, { row, bytes: size, at: Date.now() })
    bytes += size
    for (const [oldest, h] of held) {
      if (bytes <= d.maxBytes) break
      held.delete(oldest)
      bytes -= h.bytes
    }
  }

  followChanges(nc, subject, Change, origin, (change) => {
    if (change.s === undefined || change.k === undefined) dropAll()
    else drop(idOf(change.s, change.k))
  })
  followChanges(nc, d.names.subject('auth.changed'), AuthChangeCheck, origin, (change) => {
    if (change.all === true) return dropAll()
    const owners = new Set((change.keys ?? []).filter((k) => k.startsWith('u.')).map((k) => k.slice(2)))
    if (owners.size === 0) return
    epoch++
    loading.clear()
    for (const [id, h] of held) if (h.row?.owner_id != null && owners.has(h.row.owner_id)) drop(id)
  })
  onConnectionGap(nc, (state) => {
    live = state === 'reconnect'
    dropAll()
  })
  // A closed connection ends the subscriptions: from then on every read is a query.
  void (async () => {
    await nc.closed()
    live = false
    dropAll()
  })()

  return {
    row(storeId, key) {
      const id = idOf(storeId, key)
      const h = held.get(id)
      if (h !== undefined) {
        if (Date.now() - h.at < MAX_AGE_MS) {
          held.delete(id)
          held.set(id, h)
          return Promise.resolve(h.row)
        }
        drop(id)
      }
      if (!live) return query(db, storeId, key)
      const inFlight = loading.get(id)
      if (inFlight !== undefined) return inFlight
      const since = epoch
      const read: Promise<CachedState | null> = query(db, storeId, key).then(
        (row) => {
          // Dropped meanwhile (a write, a reconnect): this caller still gets what it read; nothing is kept.
          if (loading.get(id) === read && epoch === since) {
            loading.delete(id)
            keep(id, row)
          }
          return row
        },
        (err: unknown) => {
          if (loading.get(id) === read) loading.delete(id)
          throw err
        },
      )
      loading.set(id, read)
      return read
    },
    async changed(storeId, key) {
      drop(idOf(storeId, key))
      nc.publish(subject, JSON.stringify({ o: origin, s: storeId, k: key }))
      // Before the write answers: the server has queued the change to every other process.
      await nc.flush()
    },
    size: () => ({ entries: held.size, bytes }),
  }
}

const caches = new WeakMap<Db, StateEntryCache>()

/**
 * The process's cache over `db`: the first caller (the routes, the tools or the components'
 * proxy, whichever starts first) creates it; without NATS or with STATE_CACHE_BYTES=0 there is none.
 */
export function stateCacheFor(
  db: Db,
  d: { nats?: { nc: NatsConnection; names: NatsNames }; maxBytes: number },
): StateEntryCache {
  let cache = caches.get(db)
  if (cache === undefined) {
    cache =
      d.nats === undefined || d.maxBytes === 0
        ? uncachedStates(db)
        : natsStateCache({ db, ...d.nats, maxBytes: d.maxBytes })
    caches.set(db, cache)
  }
  return cache
}

/**
 * For writes to `states` made outside the state service (an operator's SQL, tests): every
 * process forgets every entry it holds and reads them again.
 */
export async function announceOutsideStateWrite(nc: NatsConnection, names: NatsNames): Promise<void> {
  nc.publish(names.subject('states.changed'), JSON.stringify({ o: 'outside' }))
  await nc.flush()
}
