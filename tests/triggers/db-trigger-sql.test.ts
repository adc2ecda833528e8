import pg from 'pg'
import t from 'tap'
import { cutBatch, readRow, rereadBatch, type ReadRow } from '../../src/db-triggers/batch.ts'
import {
  columnStatement,
  maxStatement,
  quoteIdent,
  reachStatement,
  rowsStatement,
  writersStatement,
  type Target,
} from '../../src/db-triggers/target-sql.ts'
import { postgresPool } from '../../src/data/drivers/postgres.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { eventually } from '../helpers/eventually.ts'
import { externalPostgres } from '../helpers/external-pg.ts'

/*
 * The statements a database trigger runs and how a batch is cut, against a real database (a second
 * one on the test cluster) through the platform's Postgres driver: odd identifiers stay one quoted
 * identifier, a name that is SQL finds nothing, the commit horizon holds back a row that a still
 * open transaction could overtake, and the cutting rules (ties, bytes, batch_size).
 */
const row = (bookmark: string, o: Partial<ReadRow> = {}): ReadRow => ({
  bookmark,
  settled: true,
  tie: false,
  inserted: null,
  row: { v: bookmark },
  ...o,
})

t.test('cutting a batch', async (t) => {
  const plain = ['1', '2', '3', '4'].map((b) => row(b))
  t.match(
    cutBatch(plain, 3, 10_000),
    { until: '3', more: true, held: false, splitTie: false },
    'batch_size, more behind it',
  )
  t.match(cutBatch(plain, 10, 10_000), { until: '4', more: false }, 'everything')
  t.match(cutBatch([], 10, 10_000), { until: null, more: false, held: false, rows: [] }, 'nothing new')
  // ties: 1, 2, 2, 2, 3 — a cut inside the run of 2s moves back before it
  const ties = [row('1'), row('2'), row('2', { tie: true }), row('2', { tie: true }), row('3')]
  t.match(
    cutBatch(ties, 2, 10_000),
    { until: '1', rows: [{ v: '1' }], more: true, splitTie: false },
    'never ends inside a run of equal values',
  )
  t.match(cutBatch(ties, 4, 10_000), { until: '2', more: true }, 'ends after the whole run')
  const run = [row('2'), row('2', { tie: true }), row('2', { tie: true })]
  t.match(cutBatch(run, 2, 10_000), { until: '2', splitTie: true }, 'a run longer than batch_size is cut, and says so')
  // the horizon: unsettled rows end the batch; one value split by it waits
  t.match(cutBatch([row('1'), row('2', { settled: false }), row('3')], 10, 10_000), {
    until: '1',
    more: true,
    held: false,
  })
  t.match(
    cutBatch([row('1', { settled: false }), row('2')], 10, 10_000),
    { until: null, held: true },
    'held: the first new row is not settled',
  )
  t.match(
    cutBatch([row('5'), row('5', { tie: true, settled: false })], 10, 10_000),
    { until: null, held: true },
    'a value whose other row is not settled waits whole',
  )
  // bytes: each row {"v":"n"} is 9 bytes + 1 separator, plus 2 for the brackets
  t.match(cutBatch(plain, 10, 2 + 10 * 2), { until: '2' }, 'cut to what fits in DB_TRIGGER_MAX_BATCH_BYTES')
  t.throws(() => cutBatch(plain, 10, 5), { name: 'RowTooLargeError' }, 'a row that alone is too large')
  t.match(
    rereadBatch(plain, '9', 2),
    { until: '9', rows: [{ v: '1' }, { v: '2' }] },
    'a pending batch keeps its recorded end',
  )
})

t.test('statements on a real database', async (t) => {
  const ext = await externalPostgres(t, 'dbtsql')
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
      maxPool: 3,
    },
    { connectTimeoutMs: 5000, idleMs: 10_000 },
    createLogger({ level: 'silent' }),
  )
  t.teardown(() => pool.close())
  const odd: Target = { schema: 'Sales "EU"', table: 'Orders; drop table victims; --', column: 'Created "At"' }
  await ext.sql(`create schema ${quoteIdent(odd.schema)}`)
  await ext.sql(
    `create table ${quoteIdent(odd.schema)}.${quoteIdent(odd.table)} (id serial primary key, ${quoteIdent(odd.column)} timestamptz not null)`,
  )
  await ext.sql('create table victims (id int)')
  await ext.sql(
    `insert into ${quoteIdent(odd.schema)}.${quoteIdent(odd.table)} (${quoteIdent(odd.column)}) values ('2026-01-01T00:00:00.123456Z'), ('2026-01-02T00:00:00Z'), ('2026-01-03T00:00:00Z')`,
  )

  const col = (await pool.run(columnStatement(odd, 5000))).rows[0]
  t.match(col, { udt_name: 'timestamptz', table_type: 'BASE TABLE' }, 'the odd names are found as they are spelled')
  t.equal(
    (await pool.run(columnStatement({ ...odd, column: 'id" from x; --' }, 5000))).rows.length,
    0,
    'a name that is SQL is only a name that does not exist',
  )
  const max = (await pool.run(maxStatement(odd, 5000))).rows[0]?.['v']
  t.equal(
    (await ext.sql<{ same: boolean }>("select $1::timestamptz = '2026-01-03T00:00:00Z' as same", [max]))[0]?.same,
    true,
    'MAX as text, cast back to the same instant',
  )
  const after = (
    await pool.run(
      rowsStatement(odd, 'timestamptz', {
        after: '2026-01-01T00:00:00.123456Z',
        upTo: null,
        limit: 10,
        horizon: true,
        timeoutMs: 5000,
      }),
    )
  ).rows.map(readRow)
  t.same(
    after.map((r) => r.row['id']),
    [2, 3],
    'the bookmark keeps microseconds: the first row is not read again',
  )
  // The horizon is the cluster's oldest open transaction, and this cluster is shared with the test
  // files running beside this one: one of theirs may hold it a moment longer. Settled soon, then.
  const settledRead = async () =>
    (
      await pool.run(
        rowsStatement(odd, 'timestamptz', {
          after: '2026-01-01T00:00:00.123456Z',
          upTo: null,
          limit: 10,
          horizon: true,
          timeoutMs: 5000,
        }),
      )
    ).rows.map(readRow)
  t.ok(
    await eventually(async () => ((await settledRead()).every((r) => r.settled) ? true : undefined), 'rows settled'),
    'committed rows are settled',
  )
  t.equal(
    (await ext.sql<{ n: number }>('select count(*)::int as n from victims'))[0]?.n,
    0,
    'the victims table is still there',
  )

  // the commit horizon: a transaction takes id 4 and stays open; another commits id 5
  await ext.sql('create table seq (id bigserial primary key, who text)')
  const seq: Target = { schema: 'public', table: 'seq', column: 'id' }
  const early = new pg.Client({ connectionString: ext.url })
  await early.connect()
  t.teardown(() => early.end())
  await ext.sql("insert into seq (who) values ('a'), ('b'), ('c')")
  await early.query('begin')
  await early.query("insert into seq (who) values ('late')")
  await ext.sql("insert into seq (who) values ('quick')")
  const read = async (horizon: boolean) =>
    (
      await pool.run(rowsStatement(seq, 'bigint', { after: '3', upTo: null, limit: 10, horizon, timeoutMs: 5000 }))
    ).rows.map(readRow)
  t.same(
    (await read(false)).map((r) => r.row['id']),
    [5],
    'without the horizon, id 5 is visible while id 4 is not committed yet',
  )
  const held = cutBatch(await read(true), 10, 100_000)
  t.match(
    held,
    { until: null, held: true },
    'with it, id 5 is held back: the bookmark cannot pass id 4 before its transaction ends',
  )
  await early.query('commit')
  // (another test's open transaction in the shared cluster may hold the horizon a moment longer)
  const both = await eventually(async () => {
    const batch = cutBatch(await read(true), 10, 100_000)
    return batch.rows.length > 0 ? batch : undefined
  }, 'the batch after the commit')
  t.match(
    both,
    {
      until: '5',
      rows: [
        { id: 4, who: 'late' },
        { id: 5, who: 'quick' },
      ],
    },
    'committed: both, in order',
  )
  // a pending range read again: exactly up to its recorded end
  t.same(
    (
      await pool.run(
        rowsStatement(seq, 'bigint', { after: '1', upTo: '3', limit: 10, horizon: false, timeoutMs: 5000 }),
      )
    ).rows.map((r) => readRow(r).row['id']),
    [2, 3],
  )

  // the writer wait's statements: the reach, and the sessions holding a write lock on the table
  const reach = async (target: Target, cast: string, after: string | null, limit: number) => {
    const r = (await pool.run(reachStatement(target, cast, { after, limit, timeoutMs: 5000 }))).rows[0]
    return { v: r?.['v'] ?? null, writers: JSON.parse(String(r?.['writers'])) as string[] }
  }
  t.same(
    await reach(seq, 'bigint', '1', 2),
    { v: '3', writers: [] },
    'the reach: the limit-th value after the bookmark; nobody writing',
  )
  t.same(
    await reach(seq, 'bigint', null, 100),
    { v: '5', writers: [] },
    'no bookmark yet: from the first row; fewer rows than the limit: the last',
  )
  t.same(await reach(seq, 'bigint', '5', 10), { v: null, writers: [] }, 'nothing after the bookmark')
  const odds = await reach(odd, 'timestamptz', null, 1)
  t.equal(
    (await ext.sql<{ same: boolean }>("select $1::timestamptz = '2026-01-01T00:00:00.123456Z' as same", [odds.v]))[0]
      ?.same,
    true,
    'the odd table found by its quoted name (a regclass of a bound value)',
  )
  t.equal(
    (await ext.sql<{ n: number }>('select count(*)::int as n from victims'))[0]?.n,
    0,
    'the victims table is still there',
  )
  await early.query('begin')
  await early.query("insert into seq (who) values ('writing')")
  const { writers } = await reach(seq, 'bigint', '3', 10)
  const mine = (
    await early.query<{ vx: string }>(
      'select virtualtransaction as vx from pg_locks where pid = pg_backend_pid() and locktype = $1',
      ['virtualxid'],
    )
  ).rows[0]?.vx
  t.same(
    writers,
    [mine],
    "an open writer of the table is named by its virtual transaction (the poll's own session is not)",
  )
  t.same((await reach(odd, 'timestamptz', null, 10)).writers, [], 'a writer of another table is not')
  const open = async () => Number((await pool.run(writersStatement(writers, 5000))).rows[0]?.['n'])
  t.equal(await open(), 1, 'still running')
  await early.query('commit')
  t.equal(await open(), 0, 'ended')
  // a partitioned table: a writer inserting into a partition (two levels down) directly
  await ext.sql('create table parted (id bigserial, who text) partition by range (id)')
  await ext.sql('create table parted_low partition of parted for values from (1) to (1000) partition by range (id)')
  await ext.sql('create table parted_low_a partition of parted_low for values from (1) to (500)')
  await ext.sql("insert into parted (who) values ('a')")
  const parted: Target = { schema: 'public', table: 'parted', column: 'id' }
  t.same(await reach(parted, 'bigint', null, 10), { v: '1', writers: [] }, 'a partitioned table, nobody writing')
  await early.query('begin')
  await early.query("insert into parted_low_a (id, who) values (2, 'direct')")
  const direct = (await reach(parted, 'bigint', null, 10)).writers
  t.same(
    direct,
    [
      (
        await early.query<{ vx: string }>(
          'select virtualtransaction as vx from pg_locks where pid = pg_backend_pid() and locktype = $1',
          ['virtualxid'],
        )
      ).rows[0]?.vx,
    ],
    'a writer of a partition is a writer of the table',
  )
  await early.query('commit')
})
