import type { NamespaceRecord } from '../../schemas/namespaces.ts'
import { sql, type Db } from '../platform/db.ts'

/*
 * The `namespaces` and `namespace_members` tables (migration 0007). A namespace is claimed by the
 * first resource created in it (inside that resource's transaction) or explicitly; its owner and
 * members "use" it. Kept free of permission logic: that is policy.ts.
 */
/** How a user stands in one namespace. */
export interface NamespaceStanding {
  exists: boolean
  /** The user owns the namespace or is one of its members. */
  uses: boolean
  owns: boolean
}

type Conn = Pick<Db, 'query' | 'maybeOne' | 'any' | 'oneFirst' | 'maybeOneFirst'>

/** The API's namespace shapes (schemas/namespaces.ts) are what the tables read into. */
export type { NamespaceMember, NamespaceRecord } from '../../schemas/namespaces.ts'

const iso = (v: unknown): string => new Date(v as string | number).toISOString()

export async function standingIn(db: Conn, namespace: string, userId: string): Promise<NamespaceStanding> {
  const row = await db.maybeOne(sql.unsafe`
    select n.owner_id = ${userId}::uuid as owns,
           exists (select 1 from namespace_members m where m.namespace = n.name and m.user_id = ${userId}::uuid) as member
    from namespaces n where n.name = ${namespace}`)
  if (row === null) return { exists: false, uses: false, owns: false }
  const owns = row['owns'] === true
  return { exists: true, owns, uses: owns || row['member'] === true }
}

/** Claims the namespace for the user when nobody holds it; true when this call created it. */
export async function claimNamespace(db: Conn, namespace: string, userId: string): Promise<boolean> {
  const id = await db.maybeOneFirst(sql.unsafe`insert into namespaces (name, owner_id) values (${namespace}, ${userId}::uuid) on conflict (name) do nothing returning name`)
  return id !== null
}

/** The namespaces a user owns or accepted membership of: what an agent of theirs may expand wildcards into. */
export async function namespacesUsedBy(db: Conn, userId: string): Promise<Set<string>> {
  const rows = await db.any(sql.unsafe`
    select name from namespaces where owner_id = ${userId}::uuid
    union select namespace from namespace_members where user_id = ${userId}::uuid and accepted`)
  return new Set(rows.map((r) => String(r['name'])))
}

export async function getNamespace(db: Conn, namespace: string): Promise<NamespaceRecord | null> {
  const row = await db.maybeOne(sql.unsafe`
    select n.name, n.owner_id, n.created_at,
           coalesce(jsonb_agg(jsonb_build_object('user_id', m.user_id, 'granted_by', m.granted_by, 'accepted', m.accepted) order by m.created_at) filter (where m.user_id is not null), '[]'::jsonb) as members
    from namespaces n left join namespace_members m on m.namespace = n.name
    where n.name = ${namespace} group by n.name`)
  return row === null ? null : toRecord(row)
}

export async function listNamespaces(db: Conn, userId: string | null, page: { limit: number; offset: number }): Promise<{ items: NamespaceRecord[]; total: number }> {
  const mine = userId === null ? sql.unsafe`true` : sql.unsafe`(n.owner_id = ${userId}::uuid or exists (select 1 from namespace_members x where x.namespace = n.name and x.user_id = ${userId}::uuid))`
  const rows = await db.any(sql.unsafe`
    select n.name, n.owner_id, n.created_at,
           coalesce(jsonb_agg(jsonb_build_object('user_id', m.user_id, 'granted_by', m.granted_by, 'accepted', m.accepted) order by m.created_at) filter (where m.user_id is not null), '[]'::jsonb) as members,
           count(*) over () as total
    from namespaces n left join namespace_members m on m.namespace = n.name
    where ${mine} group by n.name order by n.name limit ${page.limit} offset ${page.offset}`)
  return { items: rows.map(toRecord), total: rows.length === 0 ? 0 : Number(rows[0]?.['total']) }
}

/** Grants the namespace; a grant the member makes to themselves (an admin) counts as accepted. */
export async function addMember(db: Conn, namespace: string, userId: string, grantedBy: string): Promise<void> {
  const accepted = userId === grantedBy
  await db.query(sql.unsafe`insert into namespace_members (namespace, user_id, granted_by, accepted) values (${namespace}, ${userId}::uuid, ${grantedBy}::uuid, ${accepted})
    on conflict (namespace, user_id) do update set accepted = namespace_members.accepted or excluded.accepted`)
}

/** The member takes up a grant; false when the user is not a member. */
export async function acceptMembership(db: Conn, namespace: string, userId: string): Promise<boolean> {
  const r = await db.query(sql.unsafe`update namespace_members set accepted = true where namespace = ${namespace} and user_id = ${userId}::uuid`)
  return r.rowCount > 0
}

export async function removeMember(db: Conn, namespace: string, userId: string): Promise<boolean> {
  const r = await db.query(sql.unsafe`delete from namespace_members where namespace = ${namespace} and user_id = ${userId}::uuid`)
  return r.rowCount > 0
}

/** Deletes an empty namespace; false when resources still live in it. */
export async function deleteNamespace(db: Conn, namespace: string): Promise<boolean> {
  const inUse = await db.oneFirst(sql.unsafe`select exists (select 1 from resources where namespace = ${namespace})`)
  if (inUse === true) return false
  await db.query(sql.unsafe`delete from namespaces where name = ${namespace}`)
  return true
}

function toRecord(row: Record<string, unknown>): NamespaceRecord {
  return {
    name: String(row['name']),
    owner_id: row['owner_id'] === null ? null : String(row['owner_id']),
    members: (row['members'] as { user_id: string; granted_by: string | null; accepted: boolean }[]).map((m) => ({ user_id: String(m.user_id), granted_by: m.granted_by === null ? null : String(m.granted_by), accepted: m.accepted === true })),
    created_at: iso(row['created_at']),
  }
}
