import { randomUUID } from 'node:crypto'
import type { NatsConnection, Subscription } from '@nats-io/transport-node'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ResourceChange } from '../../schemas/resources.ts'
import type { Logger } from '../kernel/log.ts'
import { followChanges, onConnectionGap } from '../platform/change-feed.ts'
import { sql, type Db } from '../platform/db.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { anyRows } from '../platform/typed-rows.ts'
import { findRow } from './find-row.ts'
import type { AnyKind } from './kind.ts'
import { ROW_COLUMNS, ResourceRow, type Row } from './row.ts'
import type { Address } from './service.ts'

/*
 * The resource rows of this process, in memory, kept coherent across processes over NATS: the
 * resource reads of the engine (get, list, expand, byId, loadMany, secretsOf) are answered from
 * here once a kind is loaded, with no Postgres query. Writes still read and write Postgres.
 *
 * A kind is loaded whole on its first read (one query). After every committed write the writer
 * calls `changed`: the affected ids and addresses are marked pending in this process at once,
 * the change is published on `resources.changed` and the connection flushed before the write
 * answers. Every process marks the same keys pending when the message arrives and re-reads those
 * rows; a read of a pending key goes to Postgres meanwhile, a list waits for the re-reads.
 *
 * Why a write is visible to every process's next read (read-your-writes across processes): the
 * flush returns only after the NATS server has processed the publish, i.e. queued it to every
 * subscriber, before the write's reply leaves; a later request reaches another process through
 * the same server on the connection that carries the change, so the change is parsed — and its
 * keys marked pending, synchronously — first. This holds for one NATS server (and a cluster whose
 * clients share one server); across a cluster's routes a change can lag a request by the route's
 * delay (docs/nats-subjects.md, "Caches and coherence").
 */
export interface RowCache {
  /** The row at `address` (inactive ones included); null when absent. */
  find(kind: AnyKind, address: Address): Promise<Row | null>
  /** Every row of the kind, ordered by namespace and name. */
  all(kind: AnyKind): Promise<readonly Row[]>
  /** After a committed write: `ids` changed (their addresses given), or the whole kind when `ids` is absent. */
  changed(kind: AnyKind, change?: { id: string; addresses: readonly string[] }): Promise<void>
  close(): void
}

const Change = TypeCompiler.Compile(ResourceChange)

/** `ns/name` for namespaced kinds, `name` otherwise: the key addresses are cached under. */
export const addressKey = (kind: AnyKind, namespace: string, name: string) =>
  kind.addressing === 'namespaced' ? `${namespace}/${name}` : name

const keyOf = (kind: AnyKind, address: Address): string =>
  'id' in address ? `#${address.id}` : addressKey(kind, 'namespace' in address ? address.namespace : '', address.name)

/** The order of lists: by namespace, then name, byte-wise (the SQL reads say `collate "C"` to match). */
const byAddress = (a: Row, b: Row): number =>
  a.namespace === b.namespace ? cmp(a.name, b.name) : cmp(a.namespace, b.namespace)
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
const BY_ADDRESS = sql.unsafe`order by namespace collate "C", name collate "C"`

interface KindView {
  /** Bumped by every whole-kind change: a load that started before it is thrown away. */
  generation: number
  rows: Map<string, Row> | null
  byAddress: Map<string, string>
  loading: Promise<void> | null
  /** Keys (`#id`, address) being re-read, with the token of the newest re-read of each. */
  pending: Map<string, number>
  refreshes: Set<Promise<void>>
}

/** No cache (no NATS in this process, or tests of the engine alone): every read is a query. */
export function uncachedRows(db: Db): RowCache {
  return {
    find: (kind, address) => findRow(db, kind, address),
    all: (kind) =>
      anyRows(
        db,
        ResourceRow,
        sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind} ${BY_ADDRESS}`,
      ),
    changed: async () => undefined,
    close: () => undefined,
  }
}

export function natsRowCache(deps: {
  db: Db
  nc: NatsConnection
  names: NatsNames
  kinds: ReadonlyMap<string, AnyKind>
  log: Logger
}): RowCache {
  const { db, nc, log } = deps
  const subject = deps.names.subject('resources.changed')
  const views = new Map<string, KindView>()
  let token = 0
  // A process applies its own changes before publishing them (`changed`), not again on arrival.
  const origin = randomUUID()

  const viewOf = (kind: AnyKind): KindView => {
    let v = views.get(kind.kind)
    if (v === undefined) {
      v = { generation: 0, rows: null, byAddress: new Map(), loading: null, pending: new Map(), refreshes: new Set() }
      views.set(kind.kind, v)
    }
    return v
  }

  const put = (kind: AnyKind, v: KindView, row: Row) => {
    v.rows?.set(row.id, row)
    v.byAddress.set(addressKey(kind, row.namespace, row.name), row.id)
  }

  const drop = (kind: AnyKind, v: KindView, id: string) => {
    const old = v.rows?.get(id)
    if (old === undefined) return
    v.rows?.delete(id)
    const key = addressKey(kind, old.namespace, old.name)
    if (v.byAddress.get(key) === id) v.byAddress.delete(key)
  }

  async function load(kind: AnyKind, v: KindView): Promise<void> {
    if (v.loading === null) {
      const generation = v.generation
      v.loading = (async () => {
        try {
          const rows = await anyRows(
            db,
            ResourceRow,
            sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind}`,
          )
          if (v.generation !== generation) return
          v.rows = new Map()
          v.byAddress = new Map()
          for (const r of rows) put(kind, v, r)
        } finally {
          v.loading = null
        }
      })()
    }
    await v.loading
  }

  /** Applies a change to this process's view: synchronously marks the keys pending, then re-reads. */
  function apply(kind: AnyKind, id: string | undefined, addresses: readonly string[]): void {
    const v = viewOf(kind)
    if (id === undefined) {
      // The whole kind: forget it; the next read loads it again (a load in flight is discarded).
      v.generation++
      v.rows = null
      v.byAddress = new Map()
      return
    }
    const mine = ++token
    const keys = [`#${id}`, ...addresses]
    for (const k of keys) v.pending.set(k, mine)
    drop(kind, v, id)
    if (v.rows === null) {
      for (const k of keys) v.pending.delete(k)
      return
    }
    const generation = v.generation
    const refresh = (async () => {
      try {
        const row = await findRow(db, kind, { id })
        if (v.generation !== generation || v.rows === null) return
        if (keys.some((k) => v.pending.get(k) !== mine)) return // a newer change re-reads it
        drop(kind, v, id)
        if (row !== null) put(kind, v, row)
      } catch (err) {
        // Could not re-read: forget the kind, the next read loads it whole.
        log.warn({ err, kind: kind.kind, id }, 'resource cache refresh failed; the kind will be reloaded')
        v.generation++
        v.rows = null
      } finally {
        for (const k of keys) if (v.pending.get(k) === mine) v.pending.delete(k)
      }
    })()
    v.refreshes.add(refresh)
    void refresh.finally(() => v.refreshes.delete(refresh))
  }

  const sub: Subscription = followChanges(nc, subject, Change, origin, (change) => {
    const kind = deps.kinds.get(change.k)
    if (kind !== undefined) apply(kind, change.i, change.a ?? [])
  })

  // Changes published while this process was cut off from NATS never reach it: forget everything
  // when the connection drops and again when it is back (reads meanwhile go to Postgres).
  onConnectionGap(nc, () => {
    for (const v of views.values()) {
      v.generation++
      v.rows = null
      v.byAddress = new Map()
    }
  })

  return {
    async find(kind, address) {
      const v = viewOf(kind)
      const key = keyOf(kind, address)
      if (v.pending.has(key)) return findRow(db, kind, address)
      if (v.rows === null) await load(kind, v)
      if (v.rows === null || v.pending.has(key)) return findRow(db, kind, address)
      const id = 'id' in address ? address.id : v.byAddress.get(key)
      return id === undefined ? null : (v.rows.get(id) ?? null)
    },
    async all(kind) {
      const v = viewOf(kind)
      for (let i = 0; i < 3; i++) {
        if (v.rows === null) await load(kind, v)
        if (v.refreshes.size > 0) await Promise.all([...v.refreshes])
        if (v.rows !== null && v.pending.size === 0) {
          return [...v.rows.values()].sort(byAddress)
        }
      }
      // Changes keep arriving: read the table itself.
      return anyRows(
        db,
        ResourceRow,
        sql.unsafe`select ${ROW_COLUMNS} from resources where kind = ${kind.kind} ${BY_ADDRESS}`,
      )
    },
    async changed(kind, change) {
      apply(kind, change?.id, change?.addresses ?? [])
      nc.publish(
        subject,
        JSON.stringify({
          o: origin,
          k: kind.kind,
          ...(change === undefined ? {} : { i: change.id, a: change.addresses }),
        }),
      )
      // Before the write answers: the server has queued the change to every other process (see the header).
      await nc.flush()
    },
    close() {
      sub.unsubscribe()
    },
  }
}

/**
 * For writes to `resources` made outside the engine (`reencrypt-secrets`, an operator's SQL, tests
 * that corrupt a row on purpose): every process forgets these kinds and loads them again on their
 * next read.
 */
export async function announceOutsideWrite(
  nc: NatsConnection,
  names: NatsNames,
  kinds: readonly string[],
): Promise<void> {
  const subject = names.subject('resources.changed')
  for (const k of kinds) nc.publish(subject, JSON.stringify({ o: 'outside', k }))
  await nc.flush()
}
