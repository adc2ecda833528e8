import type { Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import {
  KEY_PATTERN,
  StateCreateBody,
  StatePutBody,
  StateRowShape,
  type StateCreateBody as CreateBody,
  type StateEntry,
  type StateListQuery,
  type StatePutBody as PutBody,
  type StoreSpec,
} from '../../schemas/store.ts'
import type { Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import { createSecretBox, previousKeys, secretAad, type SecretBox } from '../kernel/crypto.ts'
import { AppError, forbidden, notFound, type FieldIssue } from '../kernel/errors.ts'
import { storeKind } from '../kinds/store/kind.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { sql, type Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'
import type { ResourceMeta } from '../resources/permissions.ts'
import type { ResourceService } from '../resources/service.ts'
import { canState, entryVisible, entryWritable, managesStore, seesStore } from './access.ts'
import { stateCacheFor, type CachedState } from './entry-cache.ts'

/*
 * The one way to read and write state entries, as a given principal: the HTTP routes, the agent
 * tools and the components' state proxy all call this, so permissions, visibility, schema checks,
 * size limits, expiry and encryption are decided in one place. `limit` carries how a caller
 * reached the store (an agent's or component's `enabled_stores` entry): `readonly` refuses writes
 * even when the principal could write.
 */
export interface StoreRef {
  namespace: string
  name: string
}

export interface Through {
  /** The access an `enabled_stores` entry grants; writes through `readonly` answer 403 `state.readonly`. */
  access?: 'readonly' | 'readwrite'
}

export interface StateService {
  list(p: Principal, store: StoreRef, query?: StateListQuery): Promise<{ items: StateEntry[]; total: number }>
  get(p: Principal, store: StoreRef, key: string): Promise<StateEntry>
  /**
   * `get`'s entry as the HTTP route sends it: its JSON's UTF-8 bytes. For a plain store they are
   * rendered once per cached row and kept beside it; an encrypted store's value is decrypted per
   * read and set between the rendered rest (its plaintext is never kept).
   */
  getJson(p: Principal, store: StoreRef, key: string): Promise<Uint8Array>
  /** A new key (409 `state.exists` when it is taken by a live entry). */
  create(p: Principal, store: StoreRef, body: CreateBody, through?: Through): Promise<StateEntry>
  /** Changes the given fields of `key`, creating it when absent (then `value` is required). */
  put(
    p: Principal,
    store: StoreRef,
    key: string,
    body: PutBody,
    through?: Through,
  ): Promise<{ entry: StateEntry; created: boolean }>
  remove(p: Principal, store: StoreRef, key: string, through?: Through): Promise<void>
  /**
   * Whether `key` is a live entry the principal could read (the manifest status's store-key probe):
   * false when the store is invisible, its states unreadable for the principal, or the entry absent,
   * expired or another user's private one. The value is not decrypted.
   */
  has(p: Principal, store: StoreRef, key: string): Promise<boolean>
  /** What the principal may do with the store's states (null when it cannot see the store). */
  access(p: Principal, store: StoreRef): Promise<{ read: boolean; write: boolean } | null>
  /** Deletes expired entries; answers how many. */
  sweep(): Promise<number>
}

type Spec = Static<typeof StoreSpec>
type Row = Static<typeof StateRowShape>

interface OpenStore {
  id: string
  ref: string
  meta: ResourceMeta
  spec: Spec
  read: boolean
  write: boolean
  manager: boolean
}

const StateRow = rowType(StateRowShape)
const COLUMNS = sql.unsafe`id, key, value, value_sealed, visibility, description, tags, owner_id, expires_at, created_at, updated_at`
const LIVE = sql.unsafe`(expires_at is null or expires_at > now())`

/*
 * The gateway validated HTTP bodies already; tools and the components' proxy call the service
 * directly, so keys and bodies are checked here too (cheap, compiled once).
 */
const KEY_RE = new RegExp(KEY_PATTERN)
const createCheck = TypeCompiler.Compile(StateCreateBody)
const putCheck = TypeCompiler.Compile(StatePutBody)

function checked<B>(
  check: { Check(v: unknown): boolean; Errors(v: unknown): Iterable<{ path: string; message: string }> },
  body: B,
): B {
  if (check.Check(body)) return body
  const issues = [...check.Errors(body)].slice(0, 10).map((e) => ({ path: e.path, message: e.message }))
  throw new AppError(422, 'request.invalid', 'the state entry is invalid', { issues })
}

function checkKey(key: string): void {
  if (!KEY_RE.test(key))
    throw new AppError(422, 'request.invalid', 'invalid state key', {
      issues: [
        { path: '/key', message: 'letters, digits and _ . : @ - (not starting with . : @ -); at most 200 characters' },
      ],
    })
}

/*
 * A store as one principal sees it, kept per version of the store's record and per grant list:
 * both are shared objects while unchanged (the row cache's frozen record, replaced by a write; the
 * principal cache's permissions, replaced when a role or the user changes), so a warm state read
 * skips the store's permission checks. Weak on both, so nothing outlives its record or grants.
 */
const opened = new WeakMap<object, WeakMap<readonly string[], Map<string, OpenStore>>>()

/*
 * The rendered answer of a cached row (`getJson`): the entry's JSON around its value, and for a
 * plain store the whole answer's bytes. Rows are frozen and replaced on every change (entry-cache.ts),
 * so an answer rendered once stays right while its row is held, and goes with it (weak); the
 * entry cache counts a plain row's text twice for it. `ref` guards a store reached under another
 * name. An encrypted store's value is not here: only the metadata around it.
 */
interface Rendered {
  ref: string
  head: string
  tail: string
  bytes: Uint8Array | null
}
const rendered = new WeakMap<CachedState, Rendered>()
const utf8 = new TextEncoder()

const storeNotFound = (ref: string) => notFound(`store ${ref} not found`, 'store.not_found')
const stateNotFound = (ref: string, key: string) => notFound(`no state ${key} in store ${ref}`, 'state.not_found')

export interface StateServiceDeps {
  db: Db
  config: Config
  resources: ResourceService
  box?: SecretBox
  /** With NATS (and STATE_CACHE_BYTES > 0), single-entry reads come from the process's entry cache (entry-cache.ts). */
  nats?: { nc: NatsConnection; names: NatsNames }
}

export function createStateService(d: StateServiceDeps): StateService {
  const { db, config } = d
  const cache = stateCacheFor(db, {
    ...(d.nats === undefined ? {} : { nats: d.nats }),
    maxBytes: config.STATE_CACHE_BYTES,
  })
  const box = d.box ?? createSecretBox(config.ENCRYPTION_KEY, previousKeys(config.ENCRYPTION_KEY_PREVIOUS))
  const aad = (s: OpenStore, key: string) => secretAad('state', s.id, key)

  async function open(p: Principal, store: StoreRef): Promise<OpenStore> {
    const ref = `${store.namespace}/${store.name}`
    const [rec] = await d.resources.loadMany(storeKind, [ref])
    if (rec === undefined || rec.is_active === false) throw storeNotFound(ref)
    const byGrants = opened.get(rec)?.get(p.permissions)
    const hit = byGrants?.get(p.userId)
    if (hit !== undefined) return hit
    const meta: ResourceMeta = { namespace: store.namespace, name: store.name, ownerId: rec.owner_id ?? null }
    if (!seesStore(p, meta)) throw storeNotFound(ref)
    const spec: Spec = {
      description: rec.description,
      schema: rec.schema,
      strict: rec.strict,
      default_visibility: rec.default_visibility,
      encrypted: rec.encrypted,
    }
    const s: OpenStore = Object.freeze({
      id: rec.id,
      ref,
      meta: Object.freeze(meta),
      spec: Object.freeze(spec),
      read: canState(p, meta, 'read_state'),
      write: canState(p, meta, 'write_state'),
      manager: managesStore(p, meta),
    })
    if (byGrants === undefined) {
      let forRecord = opened.get(rec)
      if (forRecord === undefined) opened.set(rec, (forRecord = new WeakMap()))
      forRecord.set(p.permissions, new Map([[p.userId, s]]))
    } else if (byGrants.size < 64) byGrants.set(p.userId, s)
    return s
  }

  const needRead = (s: OpenStore) => {
    if (!s.read)
      throw forbidden(`reading the states of ${s.ref} requires platform.stores/${s.ref}.read_state`, 'state.forbidden')
  }
  const needWrite = (s: OpenStore, through: Through | undefined) => {
    if (through?.access === 'readonly')
      throw new AppError(403, 'state.readonly', `store ${s.ref} is enabled read-only here`)
    if (!s.write)
      throw forbidden(`writing the states of ${s.ref} requires platform.stores/${s.ref}.write_state`, 'state.forbidden')
  }

  /** A stored row as the API shows it; `value` is the plain value as read, when the row came from Postgres parsed. */
  function toEntry(s: OpenStore, row: Row | CachedState): StateEntry {
    const value: unknown =
      row.value_sealed !== null
        ? JSON.parse(box.decrypt(row.value_sealed, aad(s, row.key)))
        : 'text' in row
          ? row.text === null
            ? null
            : JSON.parse(row.text)
          : row.value
    return {
      id: row.id,
      store: s.ref,
      key: row.key,
      value,
      visibility: row.visibility,
      description: row.description,
      tags: [...row.tags],
      owner_id: row.owner_id,
      expires_at: row.expires_at,
      created_at: row.created_at,
      updated_at: row.updated_at,
    }
  }

  /** The JSON of `toEntry(s, row)`, rendered once per row (see `Rendered`). */
  function renderedOf(s: OpenStore, row: CachedState): Rendered {
    const hit = rendered.get(row)
    if (hit !== undefined && hit.ref === s.ref) return hit
    const head = `${JSON.stringify({ id: row.id, store: s.ref, key: row.key }).slice(0, -1)},"value":`
    const tail = `,${JSON.stringify({
      visibility: row.visibility,
      description: row.description,
      tags: row.tags,
      owner_id: row.owner_id,
      expires_at: row.expires_at,
      created_at: row.created_at,
      updated_at: row.updated_at,
    }).slice(1)}`
    // the value as JSON.stringify writes it (what the answer was before it was kept rendered)
    const bytes =
      row.value_sealed !== null
        ? null
        : utf8.encode(`${head}${row.text === null ? 'null' : JSON.stringify(JSON.parse(row.text))}${tail}`)
    const r: Rendered = { ref: s.ref, head, tail, bytes }
    rendered.set(row, r)
    return r
  }

  /** Size, schema and expiry checks; returns the stored columns of a value and any warnings. */
  function prepareValue(
    s: OpenStore,
    key: string,
    value: unknown,
  ): { plain: string | null; sealed: string | null; warnings: FieldIssue[] } {
    if (value === undefined)
      throw new AppError(422, 'request.invalid', 'a value is required', {
        issues: [{ path: '/value', message: 'required' }],
      })
    const text = JSON.stringify(value)
    const size = Buffer.byteLength(text)
    if (size > config.STATE_MAX_VALUE_BYTES) {
      throw new AppError(
        413,
        'state.too_large',
        `the value is ${String(size)} bytes; STATE_MAX_VALUE_BYTES allows ${String(config.STATE_MAX_VALUE_BYTES)}`,
      )
    }
    const issues = s.spec.schema === null ? [] : validateAgainst(s.spec.schema, value, '/value')
    if (issues.length > 0 && s.spec.strict)
      throw new AppError(422, 'state.invalid_value', `the value does not match the schema of store ${s.ref}`, {
        issues,
      })
    return s.spec.encrypted
      ? { plain: null, sealed: box.encrypt(text, aad(s, key)), warnings: issues }
      : { plain: text, sealed: null, warnings: issues }
  }

  const checkExpiry = (expiresAt: string | null | undefined) => {
    if (typeof expiresAt === 'string' && Date.parse(expiresAt) <= Date.now()) {
      throw new AppError(422, 'request.invalid', 'expires_at lies in the past', {
        issues: [{ path: '/expires_at', message: 'must lie in the future' }],
      })
    }
  }

  const withWarnings = (entry: StateEntry, warnings: FieldIssue[]): StateEntry =>
    warnings.length === 0 ? entry : { ...entry, warnings }

  /** The live entry of `key` (from the entry cache when warm); null when absent or expired. */
  async function liveRow(s: OpenStore, key: string): Promise<CachedState | null> {
    const row = await cache.row(s.id, key)
    return row === null || (row.expiresMs !== null && row.expiresMs <= Date.now()) ? null : row
  }

  async function insert(p: Principal, s: OpenStore, key: string, body: PutBody): Promise<StateEntry> {
    checkExpiry(body.expires_at)
    const v = prepareValue(s, key, body.value)
    // An expired entry still in the table (the sweep has not passed yet) gives its key up here.
    const row = await maybeRow(
      db,
      StateRow,
      sql.unsafe`insert into states (store_id, key, value, value_sealed, visibility, description, tags, owner_id, expires_at)
        values (${s.id}::uuid, ${key}, ${v.plain}::jsonb, ${v.sealed}, ${body.visibility ?? s.spec.default_visibility}, ${body.description ?? ''},
                ${sql.array(body.tags ?? [], 'text')}, ${p.userId}::uuid, ${body.expires_at ?? null}::timestamptz)
        on conflict (store_id, key) do update set value = excluded.value, value_sealed = excluded.value_sealed, visibility = excluded.visibility,
          description = excluded.description, tags = excluded.tags, owner_id = excluded.owner_id, expires_at = excluded.expires_at,
          created_at = now(), updated_at = now()
        where states.expires_at is not null and states.expires_at <= now()
        returning ${COLUMNS}`,
    )
    if (row === null) throw new AppError(409, 'state.exists', `the key ${key} is already used in store ${s.ref}`)
    await cache.changed(s.id, key)
    return withWarnings(toEntry(s, row), v.warnings)
  }

  /** A live entry the principal may change; one it cannot see is taken (409), one it can only see is 403. */
  function writableRow(p: Principal, s: OpenStore, row: CachedState): CachedState {
    if (!entryVisible(p, row, s.manager))
      throw new AppError(409, 'state.exists', `the key ${row.key} is already used in store ${s.ref}`)
    if (!entryWritable(p, row, s.manager))
      throw forbidden(`the entry ${row.key} belongs to another user`, 'state.forbidden')
    return row
  }

  return {
    async list(p, store, query = {}) {
      const s = await open(p, store)
      needRead(s)
      const tags = (query.tags ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '')
      const owner = query.owner === 'me' ? p.userId : query.owner
      const where = sql.join(
        [
          sql.unsafe`store_id = ${s.id}::uuid`,
          LIVE,
          s.manager ? sql.unsafe`true` : sql.unsafe`(visibility = 'shared' or owner_id = ${p.userId}::uuid)`,
          query.search === undefined || query.search === ''
            ? sql.unsafe`true`
            : sql.unsafe`starts_with(key, ${query.search})`,
          tags.length === 0 ? sql.unsafe`true` : sql.unsafe`tags @> ${sql.array(tags, 'text')}`,
          owner === undefined ? sql.unsafe`true` : sql.unsafe`owner_id = ${owner}::uuid`,
        ],
        sql.fragment` and `,
      )
      const limit = query.limit ?? 100
      const offset = query.offset ?? 0
      const rows = await anyRows(
        db,
        StateRow,
        sql.unsafe`select ${COLUMNS}, count(*) over () as total from states where ${where} order by key limit ${limit} offset ${offset}`,
      )
      const total =
        rows[0]?.total ??
        (offset === 0 ? 0 : Number(await db.oneFirst(sql.unsafe`select count(*) from states where ${where}`)))
      return { items: rows.map((r) => toEntry(s, r)), total }
    },

    async get(p, store, key) {
      checkKey(key)
      const s = await open(p, store)
      needRead(s)
      const row = await liveRow(s, key)
      if (row === null || !entryVisible(p, row, s.manager)) throw stateNotFound(s.ref, key)
      return toEntry(s, row)
    },

    async getJson(p, store, key) {
      checkKey(key)
      const s = await open(p, store)
      needRead(s)
      const row = await liveRow(s, key)
      if (row === null || !entryVisible(p, row, s.manager)) throw stateNotFound(s.ref, key)
      const r = renderedOf(s, row)
      if (r.bytes !== null) return r.bytes
      // the plaintext is the JSON.stringify text the write sealed (prepareValue), authenticated
      // by AES-GCM: set in as it is, no parse and stringify again
      return utf8.encode(`${r.head}${box.decrypt(row.value_sealed ?? '', aad(s, row.key))}${r.tail}`)
    },

    async create(p, store, body, through) {
      checked(createCheck, body)
      const s = await open(p, store)
      needWrite(s, through)
      return insert(p, s, body.key, body)
    },

    async put(p, store, key, body, through) {
      checkKey(key)
      checked(putCheck, body)
      const s = await open(p, store)
      needWrite(s, through)
      const existing = await liveRow(s, key)
      if (existing === null) return { entry: await insert(p, s, key, body), created: true }
      const row = writableRow(p, s, existing)
      checkExpiry(body.expires_at)
      const v = body.value === undefined ? null : prepareValue(s, key, body.value)
      const sets = [
        ...(v === null ? [] : [sql.unsafe`value = ${v.plain}::jsonb, value_sealed = ${v.sealed}`]),
        ...(body.visibility === undefined ? [] : [sql.unsafe`visibility = ${body.visibility}`]),
        ...(body.description === undefined ? [] : [sql.unsafe`description = ${body.description}`]),
        ...(body.tags === undefined ? [] : [sql.unsafe`tags = ${sql.array(body.tags, 'text')}`]),
        ...(body.expires_at === undefined ? [] : [sql.unsafe`expires_at = ${body.expires_at}::timestamptz`]),
        sql.unsafe`updated_at = now()`,
      ]
      const updated = await maybeRow(
        db,
        StateRow,
        sql.unsafe`update states set ${sql.join(sets, sql.fragment`, `)} where id = ${row.id}::uuid and ${LIVE} returning ${COLUMNS}`,
      )
      if (updated === null) throw stateNotFound(s.ref, key)
      await cache.changed(s.id, key)
      return { entry: withWarnings(toEntry(s, updated), v?.warnings ?? []), created: false }
    },

    async remove(p, store, key, through) {
      checkKey(key)
      const s = await open(p, store)
      needWrite(s, through)
      const row = await liveRow(s, key)
      if (row === null || !entryVisible(p, row, s.manager)) throw stateNotFound(s.ref, key)
      writableRow(p, s, row)
      const gone = await db.maybeOneFirst(sql.unsafe`delete from states where id = ${row.id}::uuid returning id`)
      if (gone === null) throw stateNotFound(s.ref, key)
      await cache.changed(s.id, key)
    },

    async has(p, store, key) {
      if (!KEY_RE.test(key)) return false
      let s: OpenStore
      try {
        s = await open(p, store)
      } catch (err) {
        if (err instanceof AppError && err.code === 'store.not_found') return false
        throw err
      }
      if (!s.read) return false
      const row = await liveRow(s, key)
      return row !== null && entryVisible(p, row, s.manager)
    },

    async access(p, store) {
      try {
        const s = await open(p, store)
        return { read: s.read, write: s.write }
      } catch (err) {
        if (err instanceof AppError && err.code === 'store.not_found') return null
        throw err
      }
    },

    async sweep() {
      const res = await db.query(sql.unsafe`delete from states where expires_at <= now()`)
      return res.rowCount
    },
  }
}
