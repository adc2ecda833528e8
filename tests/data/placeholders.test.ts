import t from 'tap'
import { placeholderIssues, placeholderNames, splitPlaceholders } from '../../src/data/placeholders.ts'
import { renderPg } from '../../src/data/drivers/postgres.ts'
import { renderClickHouse } from '../../src/data/drivers/clickhouse.ts'
import { renderSnowflake } from '../../src/data/drivers/snowflake.ts'

/* The `:name` lexer and the three drivers' bound forms (pure functions; no servers). */
const names = (sql: string) => placeholderNames(splitPlaceholders(sql))

t.test('placeholders are found in SQL text only', async (t) => {
  t.same(names('select * from t where a = :a and b = :b_2 and c = :a'), ['a', 'b_2'])
  t.same(names("select ':no', 'it''s :no', E'\\' :no', \"col:no\", `x:no` from t where x = :yes"), ['yes'])
  t.same(names('select :v::int, x::text, array[1,2][1:2], $$ :no $$, $tag$ :no $$ :no $tag$ from t'), ['v'])
  t.same(names('select 1 -- :no\n, /* :no /* nested :no */ still :no */ :yes'), ['yes'])
  t.same(names('select :1, ::x, a := 1'), [], 'a digit, a cast and := are not placeholders')
})

t.test('unterminated literals and comments are refused', async (t) => {
  for (const sql of ["select 'x", 'select "x', 'select /* x', 'select $a$ x', 'select `x'])
    t.equal(placeholderIssues(sql).length, 1, sql)
  t.same(placeholderIssues('select 1'), [])
})

t.test('each driver binds instead of interpolating', async (t) => {
  const pieces = splitPlaceholders("select :a, :b, :a, ':a'")
  const params = { a: "x'; drop table t; --", b: 2 }
  t.same(renderPg({ pieces, params }), { text: "select $1, $2, $1, ':a'", values: ["x'; drop table t; --", 2] })
  t.same(renderSnowflake({ pieces, params }), {
    text: "select ?, ?, ?, ':a'",
    bindings: {
      '1': { type: 'TEXT', value: "x'; drop table t; --" },
      '2': { type: 'FIXED', value: '2' },
      '3': { type: 'TEXT', value: "x'; drop table t; --" },
    },
  })
  const ch = renderClickHouse({ pieces, params })
  t.equal(ch.query, "select (SELECT a FROM _params), (SELECT b FROM _params), (SELECT a FROM _params), ':a'")
  t.equal(ch.structure, 'a String, b Int64')
  t.same(ch.row, params)
  t.notOk(ch.query.includes('drop'), 'the value is not in the statement')
})
