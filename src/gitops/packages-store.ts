import type { CommonQueryMethods } from 'slonik'
import { sql } from '../platform/db.ts'
import { anyRows, maybeRow, oneRow, rowType } from '../platform/typed-rows.ts'
import { InstalledPackage } from './packages-schemas.ts'
import { Type as T } from '@sinclair/typebox'

/* The `packages` table (migration 0035): one row per installed package. */

const Row = rowType(InstalledPackage)
const SourceRow = rowType(T.Object({ source: T.String() }))
const COLUMNS = sql.unsafe`id, name, version, description, author, url, "values", dependencies, installed_by, installed_at, updated_at`

type Q = Pick<CommonQueryMethods, 'any' | 'maybeOne' | 'one' | 'query'>

export interface PackageRecordInput {
  name: string
  version: string
  description: string
  author: string | null
  url: string | null
  source: string
  values: Record<string, string>
  dependencies: { package_name: string; version: string | null }[]
  installedBy: string
}

export const listPackages = (db: Q) => anyRows(db, Row, sql.unsafe`select ${COLUMNS} from packages order by name`)

export const getPackage = (db: Q, name: string) =>
  maybeRow(db, Row, sql.unsafe`select ${COLUMNS} from packages where name = ${name}`)

export async function packageSource(db: Q, name: string): Promise<string | null> {
  const row = await maybeRow(db, SourceRow, sql.unsafe`select source from packages where name = ${name}`)
  return row?.source ?? null
}

/** Inserts the record, or replaces an installed version's (installed_at kept: when it first came). */
export const upsertPackage = (db: Q, r: PackageRecordInput) =>
  oneRow(
    db,
    Row,
    sql.unsafe`insert into packages (name, version, description, author, url, source, "values", dependencies, installed_by)
      values (${r.name}, ${r.version}, ${r.description}, ${r.author}, ${r.url}, ${r.source},
              ${JSON.stringify(r.values)}::jsonb, ${JSON.stringify(r.dependencies)}::jsonb, ${r.installedBy}::uuid)
      on conflict (name) do update set version = excluded.version, description = excluded.description,
        author = excluded.author, url = excluded.url, source = excluded.source, "values" = excluded."values",
        dependencies = excluded.dependencies, installed_by = excluded.installed_by, updated_at = now()
      returning ${COLUMNS}`,
  )

export async function deletePackage(db: Q, name: string): Promise<void> {
  await db.query(sql.unsafe`delete from packages where name = ${name}`)
}
