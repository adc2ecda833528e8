import t from 'tap'
import { checkPostgresSql } from '../../src/data/pg-sql-check.ts'
import { platformDatabaseOf } from '../../src/data/platform-database.ts'
import { splitPlaceholders } from '../../src/data/placeholders.ts'

/*
 * The parser's checks without a platform (tests/data/hostile-sql.test.ts runs them end to end):
 * positions mapped back through placeholders and multi-byte text, the run text of a read, the
 * generate_series rewrite, the write rules, and the platform database's address from its URL.
 */
const check = (sql: string, operation: 'read' | 'write' = 'read') =>
  checkPostgresSql(sql, splitPlaceholders(sql), operation)

t.test('positions are those of the saved SQL, placeholders and multi-byte characters included', async (t) => {
  t.match(await check("select :a_long_placeholder_name, 'ééé', pg_read_file(:f)"), {
    ok: false,
    message: /at line 1, column 41\)$/,
  })
  t.match(await check("select 'ü',\n  :x,\n\tdblink('h', 'q')"), {
    ok: false,
    message: /dblink\(\) .*at line 3, column 2\)$/,
  })
  t.match(await check('select :x from\nwhere'), {
    ok: false,
    message: /syntax error at or near "where" \(at line 2, column 1\)$/,
  })
})

t.test('the run text of a read: the one statement, $n in first-use order, no trailing semicolon', async (t) => {
  t.same(await check('  select :b, :a, :b ; -- done'), { ok: true, text: 'select $1, $2, $1 ' })
  t.same(await check('select 1 -- no semicolon'), { ok: true, text: 'select 1 -- no semicolon' })
  t.same(await check('values (1), (2)'), { ok: true, text: 'values (1), (2)' })
})

t.test('generate_series in FROM becomes a lateral subquery that keeps the column names', async (t) => {
  t.same(await check('select * from generate_series(1, :n)'), {
    ok: true,
    text: 'select * from lateral (select generate_series(1, $1) as "generate_series") as generate_series',
  })
  t.same(await check('select g from pg_catalog.generate_series(1, 10) g'), {
    ok: true,
    text: 'select g from lateral (select pg_catalog.generate_series(1, 10) as "g") g',
  })
  t.same(await check('select x from t, lateral generate_series(1, t.n) as s(x)'), {
    ok: true,
    text: 'select x from t, lateral (select generate_series(1, t.n) as "s") as s(x)',
  })
  // left alone: WITH ORDINALITY, ROWS FROM, other functions, a select-list call
  for (const sql of [
    'select * from generate_series(1, 3) with ordinality',
    'select * from rows from (generate_series(1, 3))',
    'select * from unnest(array[1, 2])',
    'select generate_series(1, 3)',
  ]) {
    t.same(await check(sql), { ok: true, text: sql }, sql)
  }
})

t.test(
  'writes: one statement, no COPY or code the check never sees, no denied function; session functions allowed',
  async (t) => {
    t.match(await check("copy items from '/etc/passwd'", 'write'), {
      ok: false,
      message: /a write query may not be COPY/,
    })
    t.match(await check("create function f() returns int language sql as 'select 1'", 'write'), {
      ok: false,
      message: /CREATE FUNCTION/,
    })
    t.match(await check("alter system set archive_command = 'true'", 'write'), { ok: false, message: /ALTER SYSTEM/ })
    t.match(await check('set role postgres', 'write'), { ok: false, message: /SET \/ RESET/ })
    t.match(await check('begin', 'write'), { ok: false, message: /BEGIN\/COMMIT\/ROLLBACK/ })
    t.match(await check("select lo_export(1, '/tmp/x')", 'write'), {
      ok: false,
      message: /lo_export\(\) is not allowed in a write query/,
    })
    t.match(await check("select public.DBLINK_EXEC('x')", 'write'), { ok: false, message: /dblink_exec\(\)/ })
    t.match(await check("select ts_rewrite('a'::tsquery, 'select 1')", 'write'), {
      ok: false,
      message: /runs SQL text/,
    })
    t.same(await check("select ts_rewrite('a'::tsquery, 'a'::tsquery, 'b'::tsquery)"), {
      ok: true,
      text: "select ts_rewrite('a'::tsquery, 'a'::tsquery, 'b'::tsquery)",
    })
    for (const sql of [
      'select pg_advisory_xact_lock(7)',
      "select pg_notify('c', 'x')",
      'insert into t (a) values ($1) returning id',
      'create table t (pg_notify text)',
      "update t set a = 'pg_read_file'",
    ]) {
      t.match(await check(sql, 'write'), { ok: true }, sql)
    }
  },
)

t.test("the platform's database from its URL", async (t) => {
  t.same(platformDatabaseOf('postgres://u:p@db.internal:6543/app'), {
    hosts: ['db.internal'],
    port: 6543,
    database: 'app',
  })
  t.same(platformDatabaseOf(`postgres://postgres:pw@${encodeURIComponent('/var/lib/x/pg')}:5433/platform`), {
    hosts: 'local',
    port: 5433,
    database: 'platform',
  })
  t.same(platformDatabaseOf('postgres://u:p@/platform?host=/run/postgresql'), {
    hosts: 'local',
    port: 5432,
    database: 'platform',
  })
  t.same(platformDatabaseOf('postgres://u@localhost/platform'), { hosts: 'local', port: 5432, database: 'platform' })
  t.equal(platformDatabaseOf(undefined), undefined)
})
