import t from 'tap'
import { Type as T } from '@sinclair/typebox'
import { sql } from '../../src/platform/db.ts'
import { anyRows, maybeRow, rowType } from '../../src/platform/typed-rows.ts'
import { startTestPlatform } from '../helpers/env.ts'

/* Typed rows (src/platform/typed-rows.ts): rows come back as the schema's type, and a row that does not match is an internal error naming the place. */
t.test('rows are checked against their schema', async (t) => {
  const env = await startTestPlatform(t)
  const db = env.platform.db
  if (db === undefined) throw new Error('no database')
  const Pair = rowType(T.Object({ n: T.Integer(), label: T.String() }, { title: 'pair' }))
  const rows = await anyRows(db, Pair, sql.unsafe`select g as n, 'x' || g as label from generate_series(1, 3) g`)
  t.same(rows, [
    { n: 1, label: 'x1' },
    { n: 2, label: 'x2' },
    { n: 3, label: 'x3' },
  ])
  t.equal(await maybeRow(db, Pair, sql.unsafe`select 1 as n, 'a' as label where false`), null)
  await t.rejects(maybeRow(db, Pair, sql.unsafe`select 'one' as n, 'a' as label`), {
    status: 500,
    code: 'internal',
    message: /a pair row does not match its schema at \/n/,
  })
})

t.test('formats are left to Postgres, the shape is checked; a property named "format" stays', async (t) => {
  const env = await startTestPlatform(t)
  const db = env.platform.db
  if (db === undefined) throw new Error('no database')
  const Row = rowType(
    T.Object(
      { id: T.String({ format: 'uuid' }), at: T.String({ format: 'date-time' }), format: T.String() },
      { title: 'formatted' },
    ),
  )
  t.equal(Row.schema.properties.id.format, 'uuid', 'the schema itself (docs, OpenAPI) keeps its formats')
  const row = await maybeRow(
    db,
    Row,
    sql.unsafe`select gen_random_uuid()::text as id, 'not a date' as at, 'csv' as format`,
  )
  t.equal(row?.at, 'not a date', 'a value the column guarantees is not checked again per row')
  await t.rejects(
    maybeRow(db, Row, sql.unsafe`select gen_random_uuid()::text as id, 'x' as at`),
    { status: 500, message: /at \/format/ },
    'a missing column named "format" is still a mismatch',
  )
  await t.rejects(
    maybeRow(db, Row, sql.unsafe`select 1 as id, 'x' as at, 'csv' as format`),
    { status: 500, message: /at \/id/ },
    'so is a wrong type',
  )
})
