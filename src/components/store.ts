import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto'
import { Type as T } from '@sinclair/typebox'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, maybeRow, oneRow, rowType } from '../platform/typed-rows.ts'
import type { Compiled } from './compile.ts'

/*
 * The components feature's tables (migration 0014): compiled bundles, share links, view tickets.
 * A share token is derived from its row id with SECRET_KEY (HMAC), so it can be listed again
 * without being stored; only SHA-256 digests of tokens and tickets are kept for lookups.
 */
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')

const BundleRow = rowType(
  T.Object({ source_sha256: T.String(), bundle: T.String(), warnings: T.Array(T.Object({ line: T.Number(), column: T.Number(), message: T.String() })), compiled_at: T.String() }, { title: 'component bundle' }),
)
const ShareRow = rowType(
  T.Object(
    { id: T.String(), component_id: T.String(), expires_at: T.Union([T.String(), T.Null()]), max_views: T.Union([T.Number(), T.Null()]), views: T.Number(), created_at: T.String() },
    { title: 'component share' },
  ),
)
const ViewRow = rowType(T.Object({ id: T.String(), component_id: T.String(), owner_id: T.Union([T.String(), T.Null()]) }, { title: 'counted share view' }))
const ShareState = rowType(T.Object({ expired: T.Boolean(), exhausted: T.Boolean(), visible: T.Boolean() }, { title: 'share state' }))
const TicketRow = rowType(
  T.Object(
    {
      component_id: T.String(),
      acting_user_id: T.Union([T.String(), T.Null()]),
      share_id: T.Union([T.String(), T.Null()]),
      permissions: T.Union([T.Array(T.String()), T.Null()]),
      share_live: T.Boolean(),
    },
    { title: 'view ticket' },
  ),
)

export type ShareRecord = (typeof ShareRow.schema)['static'] & { token: string }
export type TicketRecord = (typeof TicketRow.schema)['static']
export type CountedView = { ok: true; shareId: string; componentId: string; ownerId: string | null } | { ok: false; reason: 'not_found' | 'expired' | 'exhausted' }

const TICKET_SWEEP_MS = 60_000

export function componentStore(db: Db, secretKey: string) {
  const tokenOf = (shareId: string): string => `cs_${createHmac('sha256', secretKey).update(`component-share:${shareId}`).digest('base64url')}`
  const withToken = (r: (typeof ShareRow.schema)['static']): ShareRecord => ({ ...r, token: tokenOf(r.id) })
  const SHARE_COLUMNS = sql.unsafe`id, component_id, expires_at, max_views, views, created_at`
  let lastSweep = 0

  return {
    async bundle(componentId: string) {
      return maybeRow(db, BundleRow, sql.unsafe`select source_sha256, bundle, warnings, compiled_at from component_bundles where component_id = ${componentId}::uuid`)
    },

    async saveBundle(componentId: string, c: Compiled) {
      return oneRow(
        db,
        BundleRow,
        sql.unsafe`insert into component_bundles (component_id, source_sha256, bundle, warnings) values (${componentId}::uuid, ${c.sourceSha256}, ${c.bundle}, ${sql.jsonb(c.warnings)})
          on conflict (component_id) do update set source_sha256 = excluded.source_sha256, bundle = excluded.bundle, warnings = excluded.warnings, compiled_at = now()
          returning source_sha256, bundle, warnings, compiled_at`,
      )
    },

    async createShare(componentId: string, by: string, o: { expiresIn?: number | undefined; maxViews?: number | undefined }): Promise<ShareRecord> {
      const id = randomUUID()
      const expires = o.expiresIn === undefined ? sql.unsafe`null` : sql.unsafe`now() + make_interval(secs => ${o.expiresIn})`
      const row = await oneRow(
        db,
        ShareRow,
        sql.unsafe`insert into component_shares (id, component_id, token_hash, created_by, expires_at, max_views)
          values (${id}::uuid, ${componentId}::uuid, ${sha256(tokenOf(id))}, ${by}::uuid, ${expires}, ${o.maxViews ?? null})
          returning ${SHARE_COLUMNS}`,
      )
      return withToken(row)
    },

    async shares(componentId: string): Promise<ShareRecord[]> {
      return (await anyRows(db, ShareRow, sql.unsafe`select ${SHARE_COLUMNS} from component_shares where component_id = ${componentId}::uuid order by created_at`)).map(withToken)
    },

    async deleteShare(componentId: string, token: string): Promise<boolean> {
      const gone = await db.maybeOneFirst(sql.unsafe`delete from component_shares where component_id = ${componentId}::uuid and token_hash = ${sha256(token)} returning id`)
      return gone !== null
    },

    /**
     * Counts one view of a share link, atomically: a single conditional UPDATE, so of two viewers
     * racing for the last view exactly one gets it. Refused (nothing counted) when the link is
     * unknown, expired, used up, or its component is inactive or private.
     */
    async countView(token: string): Promise<CountedView> {
      const hash = sha256(token)
      const row = await maybeRow(
        db,
        ViewRow,
        sql.unsafe`update component_shares s set views = s.views + 1
          from resources r
          where s.token_hash = ${hash} and r.id = s.component_id and r.is_active and coalesce(r.spec->>'visibility', 'private') in ('shared', 'public')
            and (s.max_views is null or s.views < s.max_views) and (s.expires_at is null or s.expires_at > now())
          returning s.id, s.component_id, r.owner_id`,
      )
      if (row !== null) return { ok: true, shareId: row.id, componentId: row.component_id, ownerId: row.owner_id }
      // why not (read after the refusal; it only picks the message)
      const state = await maybeRow(
        db,
        ShareState,
        sql.unsafe`select (s.expires_at is not null and s.expires_at <= now()) as expired, (s.max_views is not null and s.views >= s.max_views) as exhausted,
            (r.is_active and coalesce(r.spec->>'visibility', 'private') in ('shared', 'public')) as visible
          from component_shares s join resources r on r.id = s.component_id where s.token_hash = ${hash}`,
      )
      if (state === null || !state.visible) return { ok: false, reason: 'not_found' }
      return { ok: false, reason: state.expired ? 'expired' : 'exhausted' }
    },

    /**
     * A new view ticket for a rendered page. Expired ones are swept on the way, at most once a
     * minute per process: an expired ticket is refused by its lookup anyway, and a sweep on every
     * render was a second statement on the render path (bench/components.bench.ts).
     */
    async mintTicket(o: { componentId: string; actingUserId: string | null; shareId: string | null; permissions: readonly string[] | null; ttlSeconds: number }): Promise<string> {
      const ticket = `cvt_${randomBytes(32).toString('base64url')}`
      if (Date.now() - lastSweep >= TICKET_SWEEP_MS) {
        lastSweep = Date.now()
        await db.query(sql.unsafe`delete from component_view_tickets where expires_at < now()`)
      }
      await db.query(sql.unsafe`insert into component_view_tickets (ticket_hash, component_id, acting_user_id, share_id, permissions, expires_at)
        values (${sha256(ticket)}, ${o.componentId}::uuid, ${o.actingUserId}, ${o.shareId}, ${o.permissions === null ? null : sql.jsonb([...o.permissions])},
                now() + make_interval(secs => ${o.ttlSeconds}))`)
      return ticket
    },

    /** A live ticket (unexpired; for a share page, its link unexpired too); null otherwise. */
    async ticket(ticket: string): Promise<(TicketRecord & { hash: string }) | null> {
      const hash = sha256(ticket)
      const row = await maybeRow(
        db,
        TicketRow,
        sql.unsafe`select t.component_id, t.acting_user_id, t.share_id, t.permissions,
            (t.share_id is null or (s.id is not null and (s.expires_at is null or s.expires_at > now()))) as share_live
          from component_view_tickets t left join component_shares s on s.id = t.share_id
          where t.ticket_hash = ${hash} and t.expires_at > now()`,
      )
      return row === null ? null : { ...row, hash }
    },
  }
}

export type ComponentStore = ReturnType<typeof componentStore>
