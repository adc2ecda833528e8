import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  createSecretKey,
  randomUUID,
  type KeyObject,
} from 'node:crypto'
import { Type as T, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { pooledRandomBytes } from '../kernel/pooled-random.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, maybeRow, oneRow, rowType } from '../platform/typed-rows.ts'
import type { Compiled } from './compile.ts'

/*
 * The components feature's tables (migration 0014): compiled bundles and share links. A share
 * token is derived from its row id with SECRET_KEY (HMAC), so it can be listed again without being
 * stored; only SHA-256 digests of share tokens are kept for lookups.
 *
 * View tickets are sealed, not stored: AES-256-GCM (key derived from SECRET_KEY) over who the page
 * runs as, for which component and share, with which permissions, until when. A render writes
 * nothing (an insert per render made a render 5x the resource read's CPU, bench/components.bench.ts),
 * the page cannot read or change what its ticket says, and what could end a stored ticket early
 * still does at use: a deleted component or user, a share link deleted or expired (checked on each
 * call). Migration 0018 drops the 0014 table component_view_tickets.
 */
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')

const BundleRow = rowType(
  T.Object(
    {
      source_sha256: T.String(),
      bundle: T.String(),
      warnings: T.Array(T.Object({ line: T.Number(), column: T.Number(), message: T.String() })),
      compiled_at: T.String(),
    },
    { title: 'component bundle' },
  ),
)
const ShareRow = rowType(
  T.Object(
    {
      id: T.String(),
      component_id: T.String(),
      expires_at: T.Union([T.String(), T.Null()]),
      max_views: T.Union([T.Number(), T.Null()]),
      views: T.Number(),
      created_at: T.String(),
    },
    { title: 'component share' },
  ),
)
const ViewRow = rowType(
  T.Object(
    { id: T.String(), component_id: T.String(), owner_id: T.Union([T.String(), T.Null()]) },
    { title: 'counted share view' },
  ),
)
const ShareState = rowType(
  T.Object({ expired: T.Boolean(), exhausted: T.Boolean(), visible: T.Boolean() }, { title: 'share state' }),
)
const TicketRecord = T.Object({
  component_id: T.String(),
  acting_user_id: T.Union([T.String(), T.Null()]),
  share_id: T.Union([T.String(), T.Null()]),
  permissions: T.Union([T.Array(T.String()), T.Null()]),
  share_live: T.Boolean(),
  /** When the ticket ends (ms since the epoch): a ticket minted from it for an embedded page ends no later. */
  expires_ms: T.Number(),
  /** How deep its page is nested in embedding pages (0: a page opened itself). */
  depth: T.Integer(),
})
const ShareLive = rowType(T.Object({ live: T.Boolean() }, { title: 'share link liveness' }))

/** What a sealed view ticket says (short keys: it travels with every proxy call). */
const TicketPayload = T.Object({
  c: T.String(), // component id
  u: T.Union([T.String(), T.Null()]), // acting user
  s: T.Union([T.String(), T.Null()]), // share link id (share pages)
  p: T.Union([T.Array(T.String()), T.Null()]), // permissions at render (API keys); null = the user's live ones
  e: T.Number(), // expiry, ms since the epoch
  d: T.Optional(T.Integer()), // embedding depth (absent: 0)
})
export type TicketPayload = Static<typeof TicketPayload>
const ticketPayload = TypeCompiler.Compile(TicketPayload)
const TICKET_PREFIX = 'cvt_'
const ticketKeys = new Map<string, KeyObject>()
/** The AES key of view tickets, derived from SECRET_KEY once per key (not per render), as a KeyObject (no key import per seal). */
function ticketKey(secretKey: string): KeyObject {
  let key = ticketKeys.get(secretKey)
  if (key === undefined) {
    key = createSecretKey(createHmac('sha256', secretKey).update('component-view-ticket/v1').digest())
    ticketKeys.set(secretKey, key)
  }
  return key
}

/** Seals a view ticket: `cvt_` + base64url(iv ‖ ciphertext ‖ tag). */
export function sealViewTicket(secretKey: string, payload: TicketPayload): string {
  // 96 random bits per ticket: AES-GCM's nonce, never reused under one key
  const iv = pooledRandomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', ticketKey(secretKey), iv)
  const body = cipher.update(JSON.stringify(payload), 'utf8')
  const last = cipher.final()
  return `${TICKET_PREFIX}${Buffer.concat([iv, body, last, cipher.getAuthTag()]).toString('base64url')}`
}

/** What a ticket says, or null when it was not sealed with this key (forged, altered, truncated). Expiry is the caller's check. */
export function openViewTicket(secretKey: string, ticket: string): TicketPayload | null {
  if (!ticket.startsWith(TICKET_PREFIX)) return null
  const raw = Buffer.from(ticket.slice(TICKET_PREFIX.length), 'base64url')
  if (raw.length < 12 + 16 + 2) return null
  try {
    const decipher = createDecipheriv('aes-256-gcm', ticketKey(secretKey), raw.subarray(0, 12))
    decipher.setAuthTag(raw.subarray(raw.length - 16))
    const text = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8')
    const payload: unknown = JSON.parse(text)
    return ticketPayload.Check(payload) ? payload : null
  } catch {
    return null
  }
}

export type ShareRecord = (typeof ShareRow.schema)['static'] & { token: string }
export type TicketRecord = Static<typeof TicketRecord>
export type CountedView =
  | { ok: true; shareId: string; componentId: string; ownerId: string | null }
  | { ok: false; reason: 'not_found' | 'expired' | 'exhausted' }

export function componentStore(db: Db, secretKey: string) {
  const tokenOf = (shareId: string): string =>
    `cs_${createHmac('sha256', secretKey).update(`component-share:${shareId}`).digest('base64url')}`
  const withToken = (r: (typeof ShareRow.schema)['static']): ShareRecord => ({ ...r, token: tokenOf(r.id) })
  const SHARE_COLUMNS = sql.unsafe`id, component_id, expires_at, max_views, views, created_at`

  return {
    async bundle(componentId: string) {
      return maybeRow(
        db,
        BundleRow,
        sql.unsafe`select source_sha256, bundle, warnings, compiled_at from component_bundles where component_id = ${componentId}::uuid`,
      )
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

    async createShare(
      componentId: string,
      by: string,
      o: { expiresIn?: number | undefined; maxViews?: number | undefined },
    ): Promise<ShareRecord> {
      const id = randomUUID()
      const expires =
        o.expiresIn === undefined ? sql.unsafe`null` : sql.unsafe`now() + make_interval(secs => ${o.expiresIn})`
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
      return (
        await anyRows(
          db,
          ShareRow,
          sql.unsafe`select ${SHARE_COLUMNS} from component_shares where component_id = ${componentId}::uuid order by created_at`,
        )
      ).map(withToken)
    },

    async deleteShare(componentId: string, token: string): Promise<boolean> {
      const gone = await db.maybeOneFirst(
        sql.unsafe`delete from component_shares where component_id = ${componentId}::uuid and token_hash = ${sha256(token)} returning id`,
      )
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

    /** A sealed view ticket for a rendered page (nothing is written). */
    mintTicket(o: {
      componentId: string
      actingUserId: string | null
      shareId: string | null
      permissions: readonly string[] | null
      ttlSeconds: number
      notAfterMs?: number
      depth?: number
    }): string {
      const e = Math.min(Date.now() + o.ttlSeconds * 1000, o.notAfterMs ?? Number.POSITIVE_INFINITY)
      return sealViewTicket(secretKey, {
        c: o.componentId,
        u: o.actingUserId,
        s: o.shareId,
        p: o.permissions === null ? null : [...o.permissions],
        e,
        ...(o.depth === undefined || o.depth === 0 ? {} : { d: o.depth }),
      })
    },

    /** A live ticket (sealed here, unexpired; for a share page, its link still there and unexpired); null otherwise. */
    async ticket(ticket: string): Promise<(TicketRecord & { hash: string }) | null> {
      const t = openViewTicket(secretKey, ticket)
      if (t === null || t.e <= Date.now()) return null
      let shareLive = true
      if (t.s !== null) {
        const row = await maybeRow(
          db,
          ShareLive,
          sql.unsafe`select (expires_at is null or expires_at > now()) as live from component_shares where id = ${t.s}::uuid`,
        )
        shareLive = row?.live === true
      }
      return {
        component_id: t.c,
        acting_user_id: t.u,
        share_id: t.s,
        permissions: t.p,
        share_live: shareLive,
        expires_ms: t.e,
        depth: t.d ?? 0,
        hash: sha256(ticket),
      }
    },
  }
}

export type ComponentStore = ReturnType<typeof componentStore>
