import { Kvm, type KV } from '@nats-io/kv'
import { Type as T } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { CommonQueryMethods } from 'slonik'
import { WebhookEntry, type Webhook } from '../../schemas/triggers.ts'
import { webhookKey, webhooksBucket } from '../api/webhook-wire.ts'
import type { Logger } from '../kernel/log.ts'
import { sql } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { streamReplicasOf } from '../platform/stream-replicas.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'
import { kvKeys } from '../platform/jetstream.ts'

/*
 * Webhook rows (Postgres, the source of truth) and their copy in the WEBHOOKS bucket, one entry
 * per path, which gateways watch and the call handler reads (no database read to match a call).
 * Every change writes the row first and the entry after; at start the bucket is rebuilt from the
 * table (entries without a row are deleted), so a change whose entry write was lost heals there.
 */
const Row = T.Object(
  {
    id: T.String(),
    path: T.String(),
    http_method: T.String(),
    function_namespace: T.String(),
    function_name: T.String(),
    requires_auth: T.Boolean(),
    default_values: T.Record(T.String(), T.Unknown()),
    description: T.String(),
    is_active: T.Boolean(),
    owner_id: T.String(),
    has_signing_secret: T.Boolean(),
    created_at: T.String(),
    updated_at: T.String(),
  },
  { title: 'webhook' },
)
const WebhookRow = rowType(Row)
// the signing secret's ciphertext is read only by `signingSecret` (a call that must be verified), never with the row
const columns = sql.unsafe`id, path, http_method, function_namespace, function_name, requires_auth, default_values, description, is_active, owner_id, signing_secret is not null as has_signing_secret, created_at, updated_at`
const SecretRow = rowType(
  T.Object({ signing_secret: T.Union([T.String(), T.Null()]) }, { title: 'webhook signing secret' }),
)

export type WebhookRowType = typeof Row.static

/** A row with who manages it (config, a package, or null: made by hand) and the config body's checksum. */
const ManagedRow = rowType(
  T.Object(
    { ...Row.properties, managed_by: T.Union([T.String(), T.Null()]), checksum: T.Union([T.String(), T.Null()]) },
    { title: 'managed webhook' },
  ),
)
export type ManagedWebhookRow = typeof ManagedRow.schema.static

/** Who manages a row written by config or a package; null (an API write) detaches it. */
export interface Managed {
  by: string
  checksum: string
}
const managedValues = (m: Managed | null) => sql.unsafe`${m?.by ?? null}, ${m?.checksum ?? null}`

export const toApi = (r: WebhookRowType): Webhook => ({ ...r, url_path: `/webhooks/${r.path}` })

export const toEntry = (r: WebhookRowType): WebhookEntry => ({
  id: r.id,
  path: r.path,
  http_method: r.http_method,
  requires_auth: r.requires_auth,
  function_namespace: r.function_namespace,
  function_name: r.function_name,
  default_values: r.default_values,
  owner_id: r.owner_id,
  is_active: r.is_active,
  signed: r.has_signing_secret,
})

export interface WebhookFields {
  path: string
  http_method: string
  function_namespace: string
  function_name: string
  requires_auth: boolean
  default_values: Record<string, unknown>
  description: string
  is_active: boolean
}

/** The pool, or the transaction of a config apply. */
type Q = Pick<CommonQueryMethods, 'any' | 'maybeOne' | 'query'>

export function webhookStore(db: Q) {
  return {
    byPath: (path: string) =>
      maybeRow(db, WebhookRow, sql.unsafe`select ${columns} from webhooks where path = ${path}`),
    list: (ownerId: string | null, limit: number, offset: number) =>
      anyRows(
        db,
        WebhookRow,
        sql.unsafe`select ${columns} from webhooks ${ownerId === null ? sql.unsafe`` : sql.unsafe`where owner_id = ${ownerId}::uuid`} order by path limit ${limit} offset ${offset}`,
      ),
    all: () => anyRows(db, WebhookRow, sql.unsafe`select ${columns} from webhooks`),
    /** Every row with its manager and checksum (config export and plans). */
    allManaged: () =>
      anyRows(db, ManagedRow, sql.unsafe`select ${columns}, managed_by, checksum from webhooks order by path`),
    /**
     * null when the path is taken. `sealedSecret`: the signing secret's ciphertext (bound to `id`),
     * or null. `managed`: config's or a package's (null: made through the API).
     */
    create: (
      id: string,
      ownerId: string,
      f: WebhookFields,
      sealedSecret: string | null,
      managed: Managed | null = null,
    ) =>
      maybeRow(
        db,
        WebhookRow,
        sql.unsafe`insert into webhooks (id, path, http_method, function_namespace, function_name, requires_auth, default_values, description, is_active, owner_id, signing_secret, managed_by, checksum)
        values (${id}::uuid, ${f.path}, ${f.http_method}, ${f.function_namespace}, ${f.function_name}, ${f.requires_auth}, ${sql.jsonb(JSON.parse(JSON.stringify(f.default_values)))}, ${f.description}, ${f.is_active}, ${ownerId}::uuid, ${sealedSecret}, ${managedValues(managed)})
        on conflict (path) do nothing returning ${columns}`,
      ),
    /**
     * `sealedSecret`: undefined keeps the stored one, null removes it, a string replaces it.
     * `managed`: null (an edit through the API) detaches the webhook from config or its package.
     */
    update: (id: string, f: WebhookFields, sealedSecret?: string | null, managed: Managed | null = null) =>
      maybeRow(
        db,
        WebhookRow,
        sql.unsafe`update webhooks set path = ${f.path}, http_method = ${f.http_method}, function_namespace = ${f.function_namespace}, function_name = ${f.function_name},
        requires_auth = ${f.requires_auth}, default_values = ${sql.jsonb(JSON.parse(JSON.stringify(f.default_values)))}, description = ${f.description}, is_active = ${f.is_active},
        ${sealedSecret === undefined ? sql.unsafe`` : sql.unsafe`signing_secret = ${sealedSecret},`} managed_by = ${managed?.by ?? null}, checksum = ${managed?.checksum ?? null}, updated_at = now()
        where id = ${id}::uuid returning ${columns}`,
      ),
    /** The signing secret's ciphertext (null: none, or no such webhook). */
    signingSecret: async (id: string): Promise<string | null> =>
      (await maybeRow(db, SecretRow, sql.unsafe`select signing_secret from webhooks where id = ${id}::uuid`))
        ?.signing_secret ?? null,
    delete: (id: string) => db.query(sql.unsafe`delete from webhooks where id = ${id}::uuid`),
  }
}

export type WebhookStore = ReturnType<typeof webhookStore>

export async function openWebhookBucket(nc: NatsConnection, names: NatsNames): Promise<KV> {
  return new Kvm(nc).create(webhooksBucket(names), { history: 1, replicas: streamReplicasOf(nc) })
}

export async function publishWebhook(kv: KV, row: WebhookRowType): Promise<void> {
  await kv.put(webhookKey(row.path), JSON.stringify(toEntry(row)))
}

export async function unpublishWebhook(kv: KV, path: string): Promise<void> {
  await kv.delete(webhookKey(path))
}

/** The entry of a path as the gateways see it (null: none, or deleted). */
export async function readWebhookEntry(kv: KV, path: string): Promise<WebhookEntry | null> {
  const e = await kv.get(webhookKey(path))
  if (e === null || e.operation !== 'PUT' || e.length === 0) return null
  const v: unknown = e.json()
  return WebhookEntryCheck(v) ? v : null
}

const entryCheck = TypeCompiler.Compile(WebhookEntry)
const WebhookEntryCheck = (v: unknown): v is WebhookEntry => entryCheck.Check(v)

/** Rebuilds the bucket from the table: every row's entry written, entries without a row deleted. */
export async function syncWebhookBucket(kv: KV, store: WebhookStore, log: Logger): Promise<void> {
  const rows = await store.all()
  const want = new Set(rows.map((r) => webhookKey(r.path)))
  for (const r of rows) await publishWebhook(kv, r)
  const stale = (await kvKeys(kv)).filter((k) => !want.has(k))
  for (const k of stale) await kv.delete(k)
  log.info({ webhooks: rows.length, removed: stale.length }, 'webhook bucket in step with the table')
}
