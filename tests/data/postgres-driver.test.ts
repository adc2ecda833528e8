import t from 'tap'
import { postgresPool } from '../../src/data/drivers/postgres.ts'
import type { Statement } from '../../src/data/drivers/types.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { externalPostgres } from '../helpers/external-pg.ts'

/*
 * The Postgres driver (src/data/drivers/postgres.ts) on its own, against a real database, on a pool
 * of one connection so every statement reuses the session of the one before. A statement's three
 * parts (the opening, the statement, the ROLLBACK/COMMIT with the session reset) are sent together
 * before any answer: a statement that fails must still leave the connection clean — no transaction
 * left open, no SET LOCAL timeout left behind, no half-done write — and the row limit must stop a
 * read that the driver did not wrap (the platform's own, db-triggers).
 */
const st = (sql: string, o: Partial<Statement> = {}): Statement => ({
  pieces: [{ text: sql }],
  params: {},
  readOnly: true,
  timeoutMs: 5000,
  maxRows: 100,
  ...o,
})

t.test('the driver on one pooled connection', async (t) => {
  const ext = await externalPostgres(t, 'pgdrv')
  const url = new URL(ext.url)
  const pool = postgresPool(
    {
      type: 'postgresql',
      host: url.hostname,
      port: Number(url.port),
      database: ext.database,
      username: decodeURIComponent(url.username),
      password: url.password === '' ? null : decodeURIComponent(url.password),
      sslMode: null,
      config: {},
      minPool: 0,
      maxPool: 1,
    },
    { connectTimeoutMs: 5000, idleMs: 10_000 },
    createLogger({ level: 'silent' }),
  )
  t.teardown(() => pool.close())
  await ext.sql('create table items (n int not null)')
  const session = async () =>
    (
      await pool.run(
        st(
          "select pg_backend_pid() as pid, current_setting('statement_timeout') as timeout, current_setting('transaction_read_only') as ro",
        ),
      )
    ).rows[0]
  const first = await session()
  t.match(first, { timeout: '5s', ro: 'on' }, 'a read runs read-only under its SET LOCAL timeout')

  await t.rejects(pool.run(st('select 1 / 0 as x')), { code: 'query.failed' }, 'a failing read is an error')
  // a transaction left open (aborted) would fail the next statement with 25P02
  t.match(await session(), { pid: first?.pid }, 'the same connection, no transaction left open after it')

  await t.rejects(pool.run(st('select pg_sleep(2) as s', { timeoutMs: 100 })), { code: 'query.timeout' })
  const after = await pool.run(st("select current_setting('statement_timeout') as timeout", { timeoutMs: 7000 }))
  t.match(after.rows[0], { timeout: '7s' }, "the timed-out statement's setting is gone; the next one's applies")

  await t.rejects(
    pool.run(st('insert into items values (1)')),
    { code: 'query.read_only' },
    'a write in a read is refused by Postgres',
  )
  // a write that fails after inserting two rows: the COMMIT sent behind it rolls them back
  await t.rejects(
    pool.run(
      st('insert into items select g from generate_series(1, 3) g where 1 / (g - 3) is not null', {
        readOnly: false,
      }),
    ),
    { code: 'query.failed' },
  )
  t.match((await pool.run(st('select count(*)::int as c from items'))).rows, [{ c: 0 }], 'nothing of it committed')
  const wrote = await pool.run(
    st('insert into items select g from generate_series(1, 3) g returning n', { readOnly: false, maxRows: 2 }),
  )
  t.match(wrote, { affectedRows: 3, truncated: true, rows: [{ n: 1 }, { n: 2 }] }, 'a write commits, RETURNING capped')
  t.match((await pool.run(st('select count(*)::int as c from items'))).rows, [{ c: 3 }])

  // unwrapped (no checkedText): the Execute row limit stops an endless series at max_rows + 1 (in
  // the select list: a set-returning function in FROM is materialized whole first, docs/data.md)
  const endless = await pool.run(st('select generate_series(1, 1000000000000) as g', { maxRows: 5 }))
  t.match(endless, { truncated: true, affectedRows: null }, 'the row limit stops an unwrapped read')
  t.equal(endless.rows.length, 5)
  const exact = await pool.run(st('select g from generate_series(1, 5) g', { maxRows: 5 }))
  t.match(exact, { truncated: false }, 'exactly max_rows rows is not truncated')
  t.equal(exact.rows.length, 5)
  // wrapped, as a saved query runs (checkedText): the same answer
  const wrapped = await pool.run(st('', { checkedText: 'select generate_series(1, 1000000000000) as g', maxRows: 3 }))
  t.match(wrapped, { truncated: true }, 'the checked statement under its LIMIT')
  t.equal(wrapped.rows.length, 3)

  // timestamps that are not JavaScript dates stay Postgres's text
  t.match(
    (await pool.run(st("select 'infinity'::timestamptz as a, '2026-01-02 03:04:05+00'::timestamptz as b"))).rows,
    [{ a: 'infinity', b: '2026-01-02T03:04:05.000Z' }],
  )
  t.match(await session(), { pid: first?.pid, timeout: '5s' }, 'still the one connection, clean')
})
