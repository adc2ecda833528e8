import { Type as T, type Static } from '@sinclair/typebox'
import { sql, transaction, type Db } from '../platform/db.ts'
import { anyRows, maybeRow, oneRow, rowType } from '../platform/typed-rows.ts'

/*
 * The files tables (migration 0010) through typed rows. No permission checks here: access.ts
 * decides who may see what, upload.ts what is written.
 */
export const FileRow = rowType(
  T.Object(
    {
      id: T.String(),
      collection_id: T.String(),
      name: T.String(),
      visibility: T.Union([T.Literal('private'), T.Literal('shared')]),
      file_metadata: T.Record(T.String(), T.Unknown()),
      owner_id: T.Union([T.String(), T.Null()]),
      current_version: T.Number(),
      created_at: T.String(),
      updated_at: T.String(),
    },
    { title: 'file' },
  ),
)
export type FileRowT = Static<typeof FileRow.schema>

export const VersionRow = rowType(
  T.Object(
    {
      id: T.String(),
      file_id: T.String(),
      version: T.Number(),
      object_name: T.String(),
      size_bytes: T.Number(),
      hash_sha256: T.String(),
      content_type: T.String(),
      uploaded_by: T.Union([T.String(), T.Null()]),
      created_at: T.String(),
    },
    { title: 'file version' },
  ),
)
export type VersionRowT = Static<typeof VersionRow.schema>

const FILE_COLUMNS = sql.unsafe`id, collection_id, name, visibility, file_metadata, owner_id, current_version, created_at, updated_at`
const VERSION_COLUMNS = sql.unsafe`id, file_id, version, object_name, size_bytes, hash_sha256, content_type, uploaded_by, created_at`

/*
 * File names are kept and looked up in Unicode NFC: `café.txt` typed on macOS (NFD, e + combining
 * accent) and elsewhere (NFC, é) is one file, not two look-alikes. Every path by name comes through
 * here (upload, download, info, update, delete, signed URLs, the agent tools, listing by prefix,
 * search); migration 0033 normalised the names stored before.
 */
export const nfc = (name: string): string => name.normalize('NFC')

export const fileByName = (db: Pick<Db, 'maybeOne'>, collectionId: string, name: string) =>
  maybeRow(
    db,
    FileRow,
    sql.unsafe`select ${FILE_COLUMNS} from files where collection_id = ${collectionId}::uuid and name = ${nfc(name)}`,
  )

export const filesOf = (db: Db, collectionId: string, prefix?: string) =>
  anyRows(
    db,
    FileRow,
    sql.unsafe`select ${FILE_COLUMNS} from files where collection_id = ${collectionId}::uuid ${prefix === undefined ? sql.unsafe`` : sql.unsafe`and starts_with(name, ${nfc(prefix)})`} order by name`,
  )

export const versionsOf = (db: Db, fileIds: readonly string[]) =>
  fileIds.length === 0
    ? Promise.resolve([])
    : anyRows(
        db,
        VersionRow,
        sql.unsafe`select ${VERSION_COLUMNS} from file_versions where file_id = any(${sql.array([...fileIds], 'uuid')}) order by version desc`,
      )

export const versionOf = (db: Db, fileId: string, version: number) =>
  maybeRow(
    db,
    VersionRow,
    sql.unsafe`select ${VERSION_COLUMNS} from file_versions where file_id = ${fileId}::uuid and version = ${version}`,
  )

export const versionById = (db: Db, id: string) =>
  /^[0-9a-f-]{36}$/i.test(id)
    ? maybeRow(db, VersionRow, sql.unsafe`select ${VERSION_COLUMNS} from file_versions where id = ${id}::uuid`)
    : Promise.resolve(null)

export const fileById = (db: Db, id: string) =>
  maybeRow(db, FileRow, sql.unsafe`select ${FILE_COLUMNS} from files where id = ${id}::uuid`)

const Total = rowType(T.Object({ total: T.Number() }, { title: 'collection total' }))
export const collectionBytes = async (db: Pick<Db, 'one'>, collectionId: string): Promise<number> =>
  (
    await oneRow(
      db,
      Total,
      sql.unsafe`select coalesce(sum(size_bytes), 0)::int8 as total from file_versions where collection_id = ${collectionId}::uuid`,
    )
  ).total

/** Reserves an object name: the sweeper deletes the object after `seconds` unless the commit removes the row. */
export async function reserveObject(db: Db, object: string, seconds: number): Promise<void> {
  await db.query(
    sql.unsafe`insert into file_blob_garbage (object_name, not_before) values (${object}, now() + make_interval(secs => ${seconds}))`,
  )
}

/** Brings an open reservation's deadline to now; false when there is none (the object was recorded, or is unknown). */
export async function releaseReservation(db: Db, object: string): Promise<boolean> {
  const r = await db.query(sql.unsafe`update file_blob_garbage set not_before = now() where object_name = ${object}`)
  return r.rowCount > 0
}

/** The object is to be deleted now (a refused upload). */
export async function discardObject(db: Db, object: string): Promise<void> {
  await db.query(
    sql.unsafe`insert into file_blob_garbage (object_name) values (${object}) on conflict (object_name) do update set not_before = now()`,
  )
}

export interface NewVersion {
  versionId: string
  object: string
  size: number
  sha256: string
  contentType: string
  text: string | null
}

/**
 * Records one upload as a new version, in one transaction under a per-collection lock: the total
 * (every kept version) is checked again here, so concurrent uploads cannot pass max_total_size_gb
 * together. Answers the file row, or `exists` / `over_total` / `not_visible`.
 */
export async function recordVersion(
  db: Db,
  a: {
    collectionId: string
    name: string
    userId: string
    visibility: 'private' | 'shared' | undefined
    metadata: Record<string, unknown> | undefined
    updateExisting: boolean
    maxTotal: number
    mayReplace: (f: FileRowT) => boolean
    v: NewVersion
  },
): Promise<{ file: FileRowT } | { refused: 'exists' | 'over_total' | 'not_visible' }> {
  a = { ...a, name: nfc(a.name) }
  return transaction(db, async (tx) => {
    await tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext(${`files:${a.collectionId}`}))`)
    const total = await collectionBytes(tx, a.collectionId)
    if (total + a.v.size > a.maxTotal) return { refused: 'over_total' as const }
    let file = await fileByName(tx, a.collectionId, a.name)
    if (file !== null && !a.mayReplace(file)) return { refused: 'not_visible' as const }
    if (file !== null && !a.updateExisting) return { refused: 'exists' as const }
    if (file === null) {
      file = await oneRow(
        tx,
        FileRow,
        sql.unsafe`insert into files (collection_id, name, visibility, file_metadata, owner_id, current_version)
          values (${a.collectionId}::uuid, ${a.name}, ${a.visibility ?? 'private'}, ${sql.jsonb((a.metadata ?? {}) as never)}, ${a.userId}::uuid, 1)
          returning ${FILE_COLUMNS}`,
      )
    } else {
      file = await oneRow(
        tx,
        FileRow,
        sql.unsafe`update files set current_version = current_version + 1, updated_at = now(),
            visibility = ${a.visibility ?? file.visibility}, file_metadata = ${sql.jsonb((a.metadata ?? file.file_metadata) as never)}
          where id = ${file.id}::uuid returning ${FILE_COLUMNS}`,
      )
    }
    await tx.query(sql.unsafe`insert into file_versions (id, file_id, collection_id, version, object_name, size_bytes, hash_sha256, content_type, text_content, uploaded_by)
      values (${a.v.versionId}::uuid, ${file.id}::uuid, ${a.collectionId}::uuid, ${file.current_version}, ${a.v.object}, ${a.v.size}, ${a.v.sha256}, ${a.v.contentType}, ${a.v.text}, ${a.userId}::uuid)`)
    // the object is recorded: it is no longer garbage when its reservation ends
    await tx.query(sql.unsafe`delete from file_blob_garbage where object_name = ${a.v.object}`)
    return { file }
  })
}

export async function updateFile(
  db: Db,
  id: string,
  patch: { metadata?: Record<string, unknown>; visibility?: 'private' | 'shared' },
): Promise<FileRowT> {
  return oneRow(
    db,
    FileRow,
    sql.unsafe`update files set updated_at = now(),
      file_metadata = coalesce(${patch.metadata === undefined ? null : sql.jsonb(patch.metadata as never)}::jsonb, file_metadata),
      visibility = coalesce(${patch.visibility ?? null}::text, visibility)
      where id = ${id}::uuid returning ${FILE_COLUMNS}`,
  )
}

export async function deleteFile(db: Db, id: string): Promise<void> {
  // the versions cascade; their objects go to file_blob_garbage by trigger (migration 0010)
  await db.query(sql.unsafe`delete from files where id = ${id}::uuid`)
}

const Hit = rowType(
  T.Object(
    { id: T.String(), name: T.String(), version: T.Number(), text_content: T.Union([T.String(), T.Null()]) },
    { title: 'search hit' },
  ),
)

/** Current versions of the given files whose name or text content holds `query` (case-insensitive) and whose metadata contains `filter`. */
export function searchFiles(
  db: Db,
  fileIds: readonly string[],
  query: string | undefined,
  filter: Record<string, unknown> | undefined,
  limit: number,
) {
  if (fileIds.length === 0) return Promise.resolve([])
  const pattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  // names are NFC; text content is as uploaded, so it is matched in both forms
  const like = query === undefined || query === '' ? null : pattern(nfc(query))
  const likeNfd = query === undefined || query === '' ? null : pattern(query.normalize('NFD'))
  return anyRows(
    db,
    Hit,
    sql.unsafe`select f.id, f.name, v.version, v.text_content from files f join file_versions v on v.file_id = f.id and v.version = f.current_version
      where f.id = any(${sql.array([...fileIds], 'uuid')})
        and (${like}::text is null or f.name ilike ${like} or v.text_content ilike ${like} or v.text_content ilike ${likeNfd})
        and (${filter === undefined ? null : sql.jsonb(filter as never)}::jsonb is null or f.file_metadata @> ${filter === undefined ? null : sql.jsonb(filter as never)}::jsonb)
      order by f.name limit ${limit}`,
  )
}

const Garbage = rowType(T.Object({ object_name: T.String() }, { title: 'blob garbage' }))
export const dueGarbage = (db: Db, limit: number) =>
  anyRows(
    db,
    Garbage,
    sql.unsafe`select object_name from file_blob_garbage where not_before <= now() order by not_before limit ${limit}`,
  )
export async function forgetGarbage(db: Db, object: string): Promise<void> {
  await db.query(sql.unsafe`delete from file_blob_garbage where object_name = ${object} and not_before <= now()`)
}
