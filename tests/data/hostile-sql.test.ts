import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { externalPostgres, type ExternalPg } from '../helpers/external-pg.ts'

/*
 * Hostile saved SQL on a connection whose role is a superuser (the test cluster's own `postgres`):
 * the parser's checks at save (422 naming the construct and its position) and again at run time (a
 * row written before the check existed), reads that are only reads, the session reset of pooled
 * connections, max_rows against a set-returning function in FROM, the connection test's warnings,
 * the platform's own database refused without allow_platform_database, and an unresolvable host.
 */
let env: TestPlatform
let ext: ExternalPg
let connId = ''
let oneId = ''

const post = (path: string, body: unknown) => env.request('POST', path, { body })
const exec = (ref: string, input: Record<string, unknown> = {}) => post(`/queries/${ref}/execute`, { input })
const save = (name: string, spec: Record<string, unknown>, connection = connId) =>
  post('/api/v1/queries', { namespace: 'hq', name, database_connection_id: connection, ...spec })
async function mkQuery(name: string, spec: Record<string, unknown>, connection = connId): Promise<string> {
  const r = await save(name, spec, connection)
  if (r.status !== 201) throw new Error(`query ${name}: ${r.text}`)
  return (r.body as { id: string }).id
}
type Issues = { code: string; errors?: { path: string; message: string }[] }
const issueOf = (body: unknown): string =>
  ((body as Issues).errors ?? []).map((e) => `${e.path}: ${e.message}`).join('; ')

t.before(async () => {
  env = await startTestPlatform(t, { QUERY_TIMEOUT_MS_MAX: '5000' })
  ext = await externalPostgres(t, 'hostile')
  await ext.sql(`create table items (id serial primary key, name text not null, owner text)`)
  await ext.sql(`insert into items (name, owner) values ('apple', 'a'), ('pear', 'b'), ('plum', 'a')`)
  await ext.sql(`create table owners (code text primary key, label text)`)
  await ext.sql(`insert into owners values ('a', 'Alice'), ('b', null)`)
  const r = await post('/api/v1/database-connections', {
    name: 'hostile',
    ...ext.spec,
    config: { min_pool_size: 0, max_pool_size: 3 },
  })
  if (r.status !== 201) throw new Error(r.text)
  connId = (r.body as { id: string }).id
  // one connection in the pool: the next statement gets the client the previous one used
  const one = await post('/api/v1/database-connections', {
    name: 'hostile-one',
    ...ext.spec,
    config: { min_pool_size: 0, max_pool_size: 1 },
  })
  if (one.status !== 201) throw new Error(one.text)
  oneId = (one.body as { id: string }).id
})

t.test('COPY … TO PROGRAM and pg_read_file are refused when saved (422), naming the construct and where', async (t) => {
  for (const operation of ['read', 'write']) {
    const copy = await save(`copy-${operation}`, { operation, sql: "COPY (select 1) TO PROGRAM 'touch /tmp/pwned'" })
    t.equal(copy.status, 422, copy.text)
    t.match(
      issueOf(copy.body),
      operation === 'read'
        ? /sql: a read query is a SELECT .*this is COPY \(at line 1, column 1\)/
        : /sql: a write query may not be COPY/,
    )
  }
  const file = await save('read-file', { sql: "select 1 as x,\n  pg_read_file('/etc/passwd') as f" })
  t.equal(file.status, 422)
  t.match(
    issueOf(file.body),
    /sql: the function pg_read_file\(\) is not allowed in a read query: it reads or lists files of the database server \(at line 2, column 3\)/,
  )
  // qualified, upper-case, in a subquery, as attribute notation, in a write
  for (const sql of [
    "select PG_CATALOG.PG_READ_FILE('/etc/passwd')",
    "select * from (select pg_ls_dir('.') as f) q",
    "select ('/etc/passwd'::text).pg_read_file",
    "select lo_import('/etc/passwd')",
    "select query_to_xml('select 1', true, true, '')",
    "select dblink_connect('host=example.org')",
    'select pg_terminate_backend(1)',
  ]) {
    const r = await save('denied', { sql })
    t.equal(r.status, 422, `${sql}: ${r.text}`)
    t.match(issueOf(r.body), /is not allowed in a read query/, sql)
  }
  const write = await save('denied-write', {
    operation: 'write',
    sql: "insert into items (name) select pg_read_file('/etc/hostname')",
  })
  t.equal(write.status, 422)
  t.match(issueOf(write.body), /pg_read_file\(\) is not allowed in a write query/)
  const doBlock = await save('do-block', {
    operation: 'write',
    sql: "do $$ begin execute 'copy (select 1) to program ''true'''; end $$",
  })
  t.equal(doBlock.status, 422)
  t.match(issueOf(doBlock.body), /a write query may not be DO/)
  const cast = await save('cast', {
    operation: 'write',
    sql: 'create cast (text as bytea) with function pg_read_binary_file(text)',
  })
  t.equal(cast.status, 422, 'DDL naming a denied function (a cast a later read would call unseen)')
  t.match(issueOf(cast.body), /a write query may not name the function pg_read_binary_file\(\)/)
  const parse = await save('bad-syntax', { sql: 'select id frm items where' })
  t.equal(parse.status, 422)
  t.match(
    issueOf(parse.body),
    /PostgreSQL cannot parse the SQL: syntax error at or near "items" \(at line 1, column 15\)/,
  )
})

t.test(
  'a read is only a read: one SELECT, no data-modifying WITH, no INTO, no row locks, no session functions',
  async (t) => {
    const cases: [string, RegExp][] = [
      [
        "with x as (insert into items (name) values ('cte') returning id) select * from x",
        /a read query may not contain INSERT \(a data-modifying WITH is a write\)/,
      ],
      ['with x as (delete from items returning id) select * from x', /may not contain DELETE/],
      ['select 1 as a; select 2 as b', /a query is exactly one statement; this SQL holds 2/],
      ['select * into copy_of_items from items', /may not be SELECT … INTO/],
      ['select * from items for update', /may not lock rows/],
      ['select * from items where id in (select id from items for share)', /may not lock rows/],
      ['delete from items returning id', /a read query is a SELECT .*this is DELETE/],
      [
        'select pg_advisory_lock(42)',
        /pg_advisory_lock\(\) is not allowed in a read query: it takes or releases an advisory lock/,
      ],
      ["select set_config('search_path', 'elsewhere', false)", /set_config\(\) is not allowed in a read query/],
      ["select pg_notify('c', 'x')", /pg_notify\(\) is not allowed in a read query/],
    ]
    for (const [sql, why] of cases) {
      const r = await save('not-a-read', { sql })
      t.equal(r.status, 422, `${sql}: ${r.text}`)
      t.match(issueOf(r.body), why, sql)
    }
    t.equal((await ext.sql<{ n: number }>('select count(*)::int as n from items'))[0]?.n, 3, 'nothing was written')
    const two = await save('two-writes', {
      operation: 'write',
      sql: "insert into items (name) values ('half'); select 1/0",
    })
    t.equal(two.status, 422, 'a write is one statement too')
  },
)

t.test('a query saved before the check is refused when it runs', async (t) => {
  const id = await mkQuery('innocent', { sql: 'select count(*)::int as n from items' })
  t.match((await exec('hq/innocent')).body, { rows: [{ n: 3 }] })
  const updated = await env.request('PUT', '/api/v1/queries/hq/innocent', {
    body: { sql: "select pg_read_file('/etc/passwd') as f" },
  })
  t.equal(updated.status, 422, 'an update is checked like a create')
  t.match(issueOf(updated.body), /pg_read_file\(\) is not allowed/)
  for (const sql of [
    "select pg_read_file('/etc/passwd') as f",
    "COPY (select 1) TO PROGRAM 'touch /tmp/pwned-by-query'",
    'with x as (delete from items returning id) select * from x',
  ]) {
    // what a row written before this check existed looks like: the stored SQL changed under the engine
    await env.sql(`update resources set spec = jsonb_set(spec, '{sql}', to_jsonb($2::text)) where id = $1`, [id, sql])
    const r = await exec('hq/innocent')
    t.equal(r.status, 422, `${sql}: ${r.text}`)
    t.match(r.body, { code: 'query.sql_refused', detail: /^query hq\/innocent: / })
  }
  t.equal((await ext.sql<{ n: number }>('select count(*)::int as n from items'))[0]?.n, 3, 'nothing was deleted')
})

t.test('a legitimate read with joins, CTEs and functions runs', async (t) => {
  await mkQuery('report', {
    sql: `with mine as (select i.id, i.name, i.owner from items i where i.owner = :owner or :owner::text is null)
          select m.id, upper(m.name) as name, coalesce(o.label, 'nobody') as label, now() is not null as dated,
                 (select count(*)::int from items) as total, count(*) over ()::int as shown
          from mine m left join owners o on o.code = m.owner
          order by m.id desc -- newest first`,
    input_schema: { type: 'object', properties: { owner: { type: 'string' } } },
  })
  const r = await exec('hq/report', { owner: 'a' })
  t.equal(r.status, 200, r.text)
  t.same((r.body as { rows: unknown[] }).rows, [
    { id: 3, name: 'PLUM', label: 'Alice', dated: true, total: 3, shown: 2 },
    { id: 1, name: 'APPLE', label: 'Alice', dated: true, total: 3, shown: 2 },
  ])
  await mkQuery('values', {
    sql: 'values (1, :a::text), (2, :a::text)',
    input_schema: { type: 'object', properties: { a: { type: 'string' } } },
  })
  t.match((await exec('hq/values', { a: 'x' })).body, {
    rows: [
      { column1: 1, column2: 'x' },
      { column1: 2, column2: 'x' },
    ],
  })
  await mkQuery('sleeps', { sql: 'select pg_sleep(0) is null as slept' })
  t.match(
    (await exec('hq/sleeps')).body,
    { rows: [{ slept: false }] },
    'pg_sleep is allowed (bounded by the statement timeout)',
  )
})

t.test('max_rows stops a set-returning function in FROM; ORDER BY survives the cap', async (t) => {
  await mkQuery('series-from', { sql: 'select * from generate_series(1, 1e9)', max_rows: 5, timeout_ms: 5000 })
  const r = await exec('hq/series-from')
  t.equal(r.status, 200, r.text)
  t.match(r.body, { row_count: 5, truncated: true })
  t.notMatch(r.body, { code: 'query.timeout' })
  t.same(
    (r.body as { rows: { generate_series: string }[] }).rows.map((x) => Number(x.generate_series)),
    [1, 2, 3, 4, 5],
  )
  await mkQuery('series-alias', {
    sql: 'select g.x * 2 as d from items i join generate_series(1, 1000000000) as g(x) on g.x <= i.id where i.id = 3',
    max_rows: 2,
  })
  const aliased = await exec('hq/series-alias')
  t.equal(aliased.status, 200, aliased.text)
  t.match(aliased.body, { rows: [{ d: 2 }, { d: 4 }], truncated: true })
  await mkQuery('series-lateral', {
    sql: 'select i.id, n from items i, generate_series(1, i.id) n order by i.id, n',
    max_rows: 10,
  })
  const lateral = (await exec('hq/series-lateral')).body as { rows: unknown[]; truncated: boolean }
  t.same(
    lateral.rows,
    [
      { id: 1, n: 1 },
      { id: 2, n: 1 },
      { id: 2, n: 2 },
      { id: 3, n: 1 },
      { id: 3, n: 2 },
      { id: 3, n: 3 },
    ],
    'a lateral reference to an earlier FROM item still works',
  )
  t.equal(lateral.truncated, false)
  await mkQuery('ordered', { sql: 'select id from items order by id desc', max_rows: 2 })
  t.match(
    (await exec('hq/ordered')).body,
    { rows: [{ id: 3 }, { id: 2 }], truncated: true },
    'the rows of the ORDER BY, in its order',
  )
})

t.test('a pooled connection is reset before its next statement (locks, settings, temporary tables)', async (t) => {
  await mkQuery('lock', { operation: 'write', sql: 'select pg_advisory_lock(42) is null as locked' }, oneId)
  const locked = await exec('hq/lock')
  t.equal(locked.status, 200, locked.text)
  const held = await ext.sql<{ n: number }>(
    "select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = 42 and granted",
  )
  t.equal(held[0]?.n, 0, 'no advisory lock is left in pg_locks once the write returned')
  await mkQuery(
    'set-path',
    { operation: 'write', sql: "select set_config('search_path', 'nowhere', false) as path" },
    oneId,
  )
  t.match((await exec('hq/set-path')).body, { rows: [{ path: 'nowhere' }] })
  await mkQuery('show-path', { sql: "select current_setting('search_path') as path" }, oneId)
  t.match(
    (await exec('hq/show-path')).body,
    { rows: [{ path: '"$user", public' }] },
    'a session setting of one statement is gone for the next',
  )
  await mkQuery('temp', { operation: 'write', sql: 'create temporary table scratch as select 1 as x' }, oneId)
  t.equal((await exec('hq/temp')).status, 200)
  const again = await exec('hq/temp')
  t.equal(again.status, 200, `the temporary table went with the reset: ${again.text}`)
})

t.test('the connection test warns about a superuser role and about server-file roles', async (t) => {
  const su = await post('/api/v1/database-connections/test', ext.spec)
  t.equal(su.status, 200, su.text)
  t.match(su.body, { success: true, warnings: [/is a superuser/] })
  const role = `plain_${String(process.pid)}`
  await ext.sql(`create role ${role} login password 'plain-pw'`)
  t.teardown(() => ext.sql(`drop role if exists ${role}`))
  const plain = await post('/api/v1/database-connections/test', { ...ext.spec, username: role, password: 'plain-pw' })
  t.match(plain.body, { success: true, warnings: [] })
  await ext.sql(`grant pg_read_server_files to ${role}`)
  const reader = await post('/api/v1/database-connections/test', { ...ext.spec, username: role, password: 'plain-pw' })
  t.match(reader.body, { success: true, warnings: [/pg_read_server_files/] })
  t.match((await post(`/api/v1/database-connections/${connId}/test`, {})).body, {
    success: true,
    warnings: [/superuser/],
  })
})

t.test("the platform's own database is refused unless allow_platform_database is set", async (t) => {
  const u = new URL(env.databaseUrl)
  const own = {
    connection_type: 'postgresql',
    host: u.hostname,
    port: Number(u.port || 5432),
    database: u.pathname.slice(1),
    username: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
  }
  const refused = await post('/api/v1/database-connections', { name: 'platform-db', ...own })
  t.equal(refused.status, 422, refused.text)
  t.match(issueOf(refused.body), /host: the connection leads to the platform's own database/)
  const viaLocalhost = await post('/api/v1/database-connections', { name: 'platform-db', ...own, host: 'localhost' })
  t.equal(viaLocalhost.status, 422, 'another name of the same host is the same database')
  const tested = await post('/api/v1/database-connections/test', own)
  t.equal(tested.status, 422)
  t.match(tested.body, { code: 'database.platform_database' })
  const allowed = await post('/api/v1/database-connections', {
    name: 'platform-db',
    ...own,
    allow_platform_database: true,
  })
  t.equal(allowed.status, 201, allowed.text)
  t.match((await post('/api/v1/database-connections/test', { ...own, allow_platform_database: true })).body, {
    success: true,
  })
  // a connection saved before the check (or switched by hand) is refused when used
  const id = (allowed.body as { id: string }).id
  await env.sql(
    `update resources set spec = jsonb_set(spec, '{allow_platform_database}', 'false'), updated_at = now() where id = $1`,
    [id],
  )
  await mkQuery('platform-users', { sql: 'select count(*) as n from users' }, oneId)
  await env.sql(
    `update resources set spec = jsonb_set(spec, '{database_connection_id}', to_jsonb($1::text)) where namespace = 'hq' and name = 'platform-users'`,
    [id],
  )
  const used = await exec('hq/platform-users')
  t.equal(used.status, 422, used.text)
  t.match(used.body, { code: 'database.platform_database' })
})

t.test('a host that does not resolve answers 502 upstream.dns_failed naming it (not 503)', async (t) => {
  const spec = { ...ext.spec, host: 'db.nowhere.invalid' }
  const tested = await post('/api/v1/database-connections/test', spec)
  t.equal(tested.status, 502, tested.text)
  t.match(tested.body, { code: 'upstream.dns_failed', detail: /db\.nowhere\.invalid/ })
  const made = await post('/api/v1/database-connections', { name: 'nowhere', ...spec })
  t.equal(made.status, 201, 'saved: a name may resolve later (internal DNS)')
  const id = (made.body as { id: string }).id
  await mkQuery('nowhere', { sql: 'select 1 as one' }, id)
  const run = await exec('hq/nowhere')
  t.equal(run.status, 502, run.text)
  t.match(run.body, { code: 'upstream.dns_failed', detail: /db\.nowhere\.invalid/ })
  t.equal((await post(`/api/v1/database-connections/${id}/test`, {})).status, 502)
})
