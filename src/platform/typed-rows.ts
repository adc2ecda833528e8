import type { Static, TObject } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { CommonQueryMethods } from 'slonik'
import '../../schemas/formats.ts'
import { AppError } from '../kernel/errors.ts'

/*
 * Typed rows: what a query returns is checked against a TypeBox schema (compiled once, usually a
 * shape of schemas/) and comes back as its Static type — no `as` cast on rows. slonik 47's own
 * `sql.type` takes zod schemas only, and the platform's shapes are TypeBox; this is the same idea
 * over the one schema language. A row that does not match is a bug (a renamed column, a missing
 * migration): 500 `internal`, with the place in the log, never a wrong value passed on.
 */
export interface RowType<S extends TObject> {
  readonly schema: S
  readonly check: TypeCheck<S>
}

/*
 * The check leaves string formats out (uuid, date-time, email …): a row's formats are Postgres's
 * to guarantee (a uuid or timestamptz column holds nothing else, and the row parser writes
 * timestamps one way), while a format check is a regex, or a Date.parse, per value per row — on
 * a chat turn's 50-message history that was ~2 % of the platform's CPU (perf, bench/chat). The
 * shape (columns, types, nullability, enums) is what drifts when a migration and the code disagree,
 * and that is still checked.
 */
export const rowType = <S extends TObject>(schema: S): RowType<S> => ({
  schema,
  check: TypeCompiler.Compile(withoutFormats(schema)),
})

/** A copy of a schema without its `format` keywords (symbol keys, TypeBox's Kind, kept; a property named "format" too). */
function withoutFormats<T>(s: T): T {
  if (Array.isArray(s)) return s.map((x: unknown) => withoutFormats(x)) as T
  if (s === null || typeof s !== 'object') return s
  const src = s as Record<PropertyKey, unknown>
  const out: Record<PropertyKey, unknown> = {}
  for (const k of Reflect.ownKeys(src)) {
    const v = src[k]
    if (k === 'format' && typeof v === 'string') continue
    out[k] = withoutFormats(v)
  }
  return out as T
}

type Query = Parameters<CommonQueryMethods['any']>[0]

function parsed<S extends TObject>(t: RowType<S>, row: unknown): Static<S> {
  if (t.check.Check(row)) return row
  const first = t.check.Errors(row).First()
  const name = typeof t.schema.title === 'string' ? t.schema.title : 'query'
  throw new AppError(
    500,
    'internal',
    `a ${name} row does not match its schema at ${first?.path ?? '/'}: ${first?.message ?? 'unknown'}`,
  )
}

export async function anyRows<S extends TObject>(
  db: Pick<CommonQueryMethods, 'any'>,
  t: RowType<S>,
  query: Query,
): Promise<Static<S>[]> {
  const rows = await db.any(query)
  return rows.map((r) => parsed(t, r))
}

export async function maybeRow<S extends TObject>(
  db: Pick<CommonQueryMethods, 'maybeOne'>,
  t: RowType<S>,
  query: Query,
): Promise<Static<S> | null> {
  const row = await db.maybeOne(query)
  return row === null ? null : parsed(t, row)
}

export async function oneRow<S extends TObject>(
  db: Pick<CommonQueryMethods, 'one'>,
  t: RowType<S>,
  query: Query,
): Promise<Static<S>> {
  return parsed(t, await db.one(query))
}
