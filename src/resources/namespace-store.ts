import { Type as T } from '@sinclair/typebox'
import { NamespaceRecord } from '../../schemas/namespaces.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'

/*
 * The `namespaces` and `namespace_members` tables (migration 0007). A namespace is claimed by the
 * first resource created in it (inside that resource's transaction) or explicitly; its owner and
 * members "use" it. Kept free of permission logic: that is namespace-policy.ts.
 * With the resource engine (not the namespaces feature, which has the /namespaces routes) because
 * every resource create claims and checks its namespace in its own transaction (write-steps.ts).
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

/* Rows as they come back (timestamps as ISO strings, jsonb parsed, int8 as numbers: src/platform/db.ts). */
const NamespaceRow = rowType(NamespaceRecord)
const NamespacePageRow = rowType(
  T.Object({ ...NamespaceRecord.properties, total: T.Number() }, { title: 'namespace page' }),
)
const StandingRow = rowType(
  T.Object({ owns: T.Union([T.Boolean(), T.Null()]), member: T.Boolean() }, { title: 'namespace standing' }),
)
const NameRow = rowType(T.Object({ name: T.String() }, { title: 'namespace name' }))
const MEMBERS = sql.unsafe`coalesce(jsonb_agg(jsonb_build_object('user_id', m.user_id, 'granted_by', m.granted_by, 'accepted', m.accepted) order by m.created_at) filter (where m.user_id is not null), '[]'::jsonb) as members`

export async function standingIn(db: Conn, namespace: string, userId: string): Promise<NamespaceStanding> {
  const row = await maybeRow(
    db,
    StandingRow,
    sql.unsafe`
    select n.owner_id = ${userId}::uuid as owns,
           exists (select 1 from namespace_members m where m.namespace = n.name and m.user_id = ${userId}::uuid) as member
    from namespaces n where n.name = ${namespace}`,
  )
  if (row === null) return { exists: false, uses: false, owns: false }
  const owns = row.owns === true
  return { exists: true, owns, uses: owns || row.member }
}

/** Claims the namespace for the user when nobody holds it; true when this call created it. */
export async function claimNamespace(db: Conn, namespace: string, userId: string): Promise<boolean> {
  const id = await db.maybeOneFirst(
    sql.unsafe`insert into namespaces (name, owner_id) values (${namespace}, ${userId}::uuid) on conflict (name) do nothing returning name`,
  )
  return id !== null
}

/** The namespaces a user owns or accepted membership of: what an agent of theirs may expand wildcards into. */
export async function namespacesUsedBy(db: Conn, userId: string): Promise<Set<string>> {
  const rows = await anyRows(
    db,
    NameRow,
    sql.unsafe`
    select name from namespaces where owner_id = ${userId}::uuid
    union select namespace from namespace_members where user_id = ${userId}::uuid and accepted`,
  )
  return new Set(rows.map((r) => r.name))
}

export async function getNamespace(db: Conn, namespace: string): Promise<NamespaceRecord | null> {
  return maybeRow(
    db,
    NamespaceRow,
    sql.unsafe`
    select n.name, n.owner_id, n.created_at, ${MEMBERS}
    from namespaces n left join namespace_members m on m.namespace = n.name
    where n.name = ${namespace} group by n.name`,
  )
}

export async function listNamespaces(
  db: Conn,
  userId: string | null,
  page: { limit: number; offset: number },
): Promise<{ items: NamespaceRecord[]; total: number }> {
  const mine =
    userId === null
      ? sql.unsafe`true`
      : sql.unsafe`(n.owner_id = ${userId}::uuid or exists (select 1 from namespace_members x where x.namespace = n.name and x.user_id = ${userId}::uuid))`
  const rows = await anyRows(
    db,
    NamespacePageRow,
    sql.unsafe`
    select n.name, n.owner_id, n.created_at, ${MEMBERS}, count(*) over () as total
    from namespaces n left join namespace_members m on m.namespace = n.name
    where ${mine} group by n.name order by n.name limit ${page.limit} offset ${page.offset}`,
  )
  return { items: rows.map(({ total: _total, ...record }) => record), total: rows[0]?.total ?? 0 }
}

/** Grants the namespace; a grant the member makes to themselves (an admin) counts as accepted. */
export async function addMember(db: Conn, namespace: string, userId: string, grantedBy: string): Promise<void> {
  const accepted = userId === grantedBy
  await db.query(sql.unsafe`insert into namespace_members (namespace, user_id, granted_by, accepted) values (${namespace}, ${userId}::uuid, ${grantedBy}::uuid, ${accepted})
    on conflict (namespace, user_id) do update set accepted = namespace_members.accepted or excluded.accepted`)
}

/** The member takes up a grant; false when the user is not a member. */
export async function acceptMembership(db: Conn, namespace: string, userId: string): Promise<boolean> {
  const r = await db.query(
    sql.unsafe`update namespace_members set accepted = true where namespace = ${namespace} and user_id = ${userId}::uuid`,
  )
  return r.rowCount > 0
}

export async function removeMember(db: Conn, namespace: string, userId: string): Promise<boolean> {
  const r = await db.query(
    sql.unsafe`delete from namespace_members where namespace = ${namespace} and user_id = ${userId}::uuid`,
  )
  return r.rowCount > 0
}

/** Deletes an empty namespace; false when resources still live in it. */
export async function deleteNamespace(db: Conn, namespace: string): Promise<boolean> {
  const inUse = await db.oneFirst(sql.unsafe`select exists (select 1 from resources where namespace = ${namespace})`)
  if (inUse === true) return false
  await db.query(sql.unsafe`delete from namespaces where name = ${namespace}`)
  return true
}
