import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { createLogger } from '../../src/kernel/log.ts'
import { createDb } from '../../src/platform/db.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { connectionPools, subscribeInvalidations } from '../../src/data/pools.ts'
import { eventually } from '../helpers/eventually.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { externalPostgres, type ExternalPg } from '../helpers/external-pg.ts'
import { readServices } from '../setup/services.ts'

/*
 * Database connections and queries against a real second Postgres database: connections are
 * admin-only with the password encrypted at rest, the tests of raw and saved parameters, bound
 * parameters (injection attempts stay data), the caller's :user_id, a write through a read query
 * refused by the database, the row cap the server stops at, the statement timeout, the ceilings
 * from the config, input/output schemas, other users' queries, the owner's use of a connection,
 * and pools dropped in every process when a connection changes.
 */
let env: TestPlatform
let ext: ExternalPg
let other: ExternalPg
let connId = ''
const PASSWORD = 'pw-never-stored-in-clear-7731'

const post = (path: string, body: unknown, token?: string) =>
  env.request('POST', path, { body, ...(token === undefined ? {} : { token }) })
const exec = (ref: string, input: Record<string, unknown> = {}, token?: string) =>
  post(`/queries/${ref}/execute`, { input }, token)
async function mkQuery(name: string, spec: Record<string, unknown>, token?: string): Promise<void> {
  const r = await post('/api/v1/queries', { namespace: 'db', name, database_connection_id: connId, ...spec }, token)
  if (r.status !== 201) throw new Error(`query ${name}: ${r.text}`)
}

t.before(async () => {
  env = await startTestPlatform(t, { QUERY_MAX_ROWS_MAX: '50', QUERY_TIMEOUT_MS_MAX: '1500' })
  ext = await externalPostgres(t)
  other = await externalPostgres(t, 'other')
  await ext.sql(`create table items (id serial primary key, name text not null, owner text)`)
  await ext.sql(`insert into items (name, owner) values ('apple', 'a'), ('pear', 'b'), ('plum', 'a')`)
  await ext.sql(
    `create function sneaky() returns int language sql as $$ insert into items (name) values ('sneaky') returning id $$`,
  )
  await other.sql(`create table items (id int, name text)`)
  // the test cluster's own password stands for the secret; PASSWORD is checked on a second connection
  const r = await post('/api/v1/database-connections', {
    name: 'ext',
    ...ext.spec,
    config: { min_pool_size: 0, max_pool_size: 3 },
  })
  if (r.status !== 201) throw new Error(r.text)
  connId = (r.body as { id: string }).id
})

t.test('connections are admin-only; the password is encrypted at rest and never returned', async (t) => {
  const made = await post('/api/v1/database-connections', { name: 'sealed', ...ext.spec, password: PASSWORD })
  t.equal(made.status, 201, made.text)
  const sealedId = (made.body as { id: string }).id
  const rec = (await env.request('GET', '/api/v1/database-connections/sealed')).body as Record<string, unknown>
  t.equal(rec['has_password'], true)
  t.notOk('password' in rec, 'no password in the record')
  const [row] = await env.sql<{ spec: unknown; secrets: Record<string, string> }>(
    'select spec, secrets from resources where id = $1',
    [sealedId],
  )
  t.notOk(JSON.stringify(row).includes(PASSWORD), 'the stored row does not hold the password in clear')
  t.ok(typeof row?.secrets['password'] === 'string', 'the password is stored sealed')
  const b = await env.createUser('conn-b@test.local')
  t.equal((await env.request('GET', '/api/v1/database-connections', { token: b.token })).status, 403)
  t.equal((await post('/api/v1/database-connections', { name: 'mine', ...ext.spec }, b.token)).status, 403)
  t.equal((await post('/api/v1/database-connections/test', ext.spec, b.token)).status, 403)
  t.equal((await post(`/api/v1/database-connections/${connId}/test`, {}, b.token)).status, 403)
})

t.test('POST …/test answers for raw parameters and for a saved connection', async (t) => {
  const ok = await post('/api/v1/database-connections/test', ext.spec)
  t.equal(ok.status, 200, ok.text)
  t.match(ok.body, { success: true, server_version: /^PostgreSQL \d+/ })
  const bad = await post('/api/v1/database-connections/test', { ...ext.spec, database: 'no_such_database_here' })
  t.match(bad.body, { success: false, server_version: null, message: /no_such_database_here/ })
  const refused = await post('/api/v1/database-connections/test', { ...ext.spec, port: 1 })
  t.match(refused.body, { success: false })
  const saved = await post(`/api/v1/database-connections/${connId}/test`, {})
  t.match(saved.body, { success: true })
  t.equal(
    (await post('/api/v1/database-connections/test', { connection_type: 'oracle', host: 'x' })).status,
    422,
    'unknown type',
  )
})

t.test('parameters are bound, casts and literals are left alone, :user_id is the caller', async (t) => {
  await mkQuery('by-owner', {
    sql: "select id, name, ':not_a_param' as lit, :n::int + 1 as next, :user_id::text as uid from items where owner = :owner -- :comment\norder by id",
    input_schema: {
      type: 'object',
      properties: { owner: { type: 'string' }, n: { type: 'integer' } },
      required: ['owner', 'n'],
    },
  })
  const r = await exec('db/by-owner', { owner: 'a', n: 41, user_id: 'forged' })
  t.equal(r.status, 200, r.text)
  const body = r.body as {
    operation: string
    rows: Record<string, unknown>[]
    row_count: number
    truncated: boolean
    duration_ms: number
  }
  t.equal(body.operation, 'read')
  t.same(
    body.rows.map((x) => x['name']),
    ['apple', 'plum'],
  )
  t.equal(body.rows[0]?.['lit'], ':not_a_param', 'a placeholder inside a string literal is text')
  t.equal(body.rows[0]?.['next'], 42, 'a ::cast is not a placeholder')
  t.equal(body.rows[0]?.['uid'], env.adminId, ':user_id is the caller, not the input')
  t.equal(body.row_count, 2)
  t.equal(body.truncated, false)
  t.type(body.duration_ms, 'number')
  t.equal(
    (await post('/api/v1/queries/db/by-owner/execute', { input: { owner: 'b', n: 1 } })).status,
    200,
    'the management alias answers too',
  )
})

t.test('SQL injection through parameters stays data', async (t) => {
  await mkQuery('by-name', {
    sql: 'select id, name from items where name = :name',
    input_schema: { type: 'object', properties: { name: { type: 'string' } } },
  })
  for (const name of ["x' or '1'='1", "x'; drop table items; --", "apple' --", "'); delete from items; select ('"]) {
    const r = await exec('db/by-name', { name })
    t.equal(r.status, 200, r.text)
    t.same((r.body as { rows: unknown[] }).rows, [], `no rows for ${name}`)
  }
  t.equal((await ext.sql<{ n: number }>('select count(*)::int as n from items'))[0]?.n, 3, 'the table is intact')
})

t.test(
  'a write through a read query is refused: by the parser when saved, by the database (read-only transaction) when hidden in a function',
  async (t) => {
    for (const sql of [
      'delete from items returning id',
      "with x as (insert into items (name) values ('cte') returning id) select * from x",
    ]) {
      const saved = await post('/api/v1/queries', {
        namespace: 'db',
        name: 'sneaky',
        database_connection_id: connId,
        sql,
      })
      t.equal(saved.status, 422, `${sql}: ${saved.text}`)
    }
    await mkQuery('sneaky-fn', { sql: 'select sneaky() as id' })
    const r = await exec('db/sneaky-fn')
    t.equal(r.status, 422, r.text)
    t.match(r.body, { code: 'query.read_only', detail: /read-only transaction/ })
    t.equal((await ext.sql<{ n: number }>('select count(*)::int as n from items'))[0]?.n, 3, 'nothing was written')
  },
)

t.test('a write query commits in its own transaction and reports affected rows', async (t) => {
  await mkQuery('add', {
    operation: 'write',
    sql: 'insert into items (name, owner) values (:name, :user_email) returning id, name, owner',
    input_schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  })
  const r = await exec('db/add', { name: 'kiwi' })
  t.equal(r.status, 200, r.text)
  t.match(r.body, {
    operation: 'write',
    affected_rows: 1,
    row_count: 1,
    rows: [{ name: 'kiwi', owner: 'admin@test.local' }],
  })
  const twice = await post('/api/v1/queries', {
    namespace: 'db',
    name: 'broken-write',
    database_connection_id: connId,
    operation: 'write',
    sql: "insert into items (name) values ('half'); select 1/0",
  })
  t.equal(twice.status, 422, 'two statements are refused when saved')
  await mkQuery('failing-write', {
    operation: 'write',
    sql: "insert into items (name) select 'half' from generate_series(1, 2) g where 1 / (g - 2) is not null",
  })
  const bad = await exec('db/failing-write')
  t.equal(bad.status, 422, 'a write failing half-way')
  t.equal(
    (await ext.sql<{ n: number }>("select count(*)::int as n from items where name = 'half'"))[0]?.n,
    0,
    'nothing of a failed write is kept',
  )
  await ext.sql("delete from items where name = 'kiwi'")
})

t.test('max_rows: the server stops at max_rows + 1 (an endless series answers at once)', async (t) => {
  // without the cap this query would run until the statement timeout (1.5 s ceiling here); a
  // set-returning function in the select list is produced row by row (in FROM: hostile-sql.test.ts)
  await mkQuery('endless', { sql: 'select generate_series(1, 1000000000000) as g', max_rows: 5 })
  const r = await exec('db/endless')
  t.equal(r.status, 200, r.text)
  t.match(r.body, { row_count: 5, truncated: true })
  t.same(
    (r.body as { rows: { g: number }[] }).rows.map((x) => x.g),
    [1, 2, 3, 4, 5],
  )
  await mkQuery('exact', { sql: 'select g from generate_series(1, 5) g', max_rows: 5 })
  t.match((await exec('db/exact')).body, { row_count: 5, truncated: false })
  await mkQuery('ceiling', { sql: 'select generate_series(1, 1000000000000) as g', max_rows: 1000 })
  t.match((await exec('db/ceiling')).body, { row_count: 50, truncated: true }, 'QUERY_MAX_ROWS_MAX clamps max_rows')
})

t.test(
  'a changed query runs its new text and schema (what a run works out once is kept per saved version)',
  async (t) => {
    await mkQuery('changing', {
      sql: 'select :a::int as v',
      input_schema: { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] },
    })
    t.match((await exec('db/changing', { a: 1 })).body, { rows: [{ v: 1 }] })
    const patched = await env.request('PUT', '/api/v1/queries/db/changing', {
      body: {
        sql: 'select :b::int * 10 as v',
        input_schema: { type: 'object', properties: { b: { type: 'integer' } }, required: ['b'] },
      },
    })
    t.equal(patched.status, 200, patched.text)
    t.match((await exec('db/changing', { b: 2 })).body, { rows: [{ v: 20 }] }, 'the new text, the new placeholder')
    t.match((await exec('db/changing', { a: 1 })).body, { code: 'query.invalid_input' }, 'the new input_schema')
    // a placeholder named like an object's inherited property takes no value from the prototype
    await mkQuery('inherited', { sql: 'select :constructor::text as x' })
    t.match((await exec('db/inherited')).body, { code: 'query.missing_parameter' })
  },
)

t.test('statement timeout: SET LOCAL statement_timeout = timeout_ms, clamped to QUERY_TIMEOUT_MS_MAX', async (t) => {
  await mkQuery('slow', { sql: 'select pg_sleep(3) as s', timeout_ms: 100 })
  const r = await exec('db/slow')
  t.equal(r.status, 504, r.text)
  t.match(r.body, { code: 'query.timeout' })
  await mkQuery('slow-ceiling', { sql: 'select pg_sleep(30) as s', timeout_ms: 60000 })
  const c = await exec('db/slow-ceiling')
  t.equal(c.status, 504, 'a 60 s timeout_ms is clamped to the 1.5 s ceiling')
  // the pool is still usable after cancelled statements
  t.equal((await exec('db/by-owner', { owner: 'a', n: 1 })).status, 200)
})

t.test('input and output schemas', async (t) => {
  const wrong = await exec('db/by-owner', { owner: 7, n: 'x' })
  t.equal(wrong.status, 422)
  t.match(wrong.body, { code: 'query.invalid_input', errors: [{ path: /\/input/ }] })
  await mkQuery('undeclared', { sql: 'select :nobody as x' })
  t.match((await exec('db/undeclared')).body, { code: 'query.missing_parameter' })
  await mkQuery('optional', {
    sql: "select coalesce(:maybe::text, 'none') as x",
    input_schema: { type: 'object', properties: { maybe: { type: 'string' } } },
  })
  t.match((await exec('db/optional')).body, { rows: [{ x: 'none' }] }, 'an optional parameter left out is NULL')
  await mkQuery('typed-out', {
    sql: 'select name from items order by id',
    output_schema: { type: 'object', properties: { name: { type: 'integer' } } },
  })
  const out = await exec('db/typed-out')
  t.equal(out.status, 500)
  t.match(out.body, { code: 'query.output_invalid' })
  await mkQuery('typed-ok', {
    sql: 'select id, name from items order by id',
    output_schema: { type: 'array', maxItems: 10, items: { type: 'object', required: ['id', 'name'] } },
  })
  t.equal((await exec('db/typed-ok')).status, 200)
  const bad = await post('/api/v1/queries', {
    namespace: 'db',
    name: 'unterminated',
    database_connection_id: connId,
    sql: "select 'oops",
  })
  t.equal(bad.status, 422, 'an unterminated literal is refused when saved')
})

t.test("user B gets 404 on A's query; A needs the use of the connection granted", async (t) => {
  const a = await env.createUser('query-a@test.local')
  const b = await env.createUser('query-b@test.local')
  await env.sql(
    `insert into roles (name, permissions) values ('query-runners', '{"platform.queries/*/*.execute:own": true}'::jsonb)`,
  )
  await env.sql(`insert into user_roles (user_id, role_id) select $1, id from roles where name = 'query-runners'`, [
    a.id,
  ])
  const made = await post(
    '/api/v1/queries',
    { namespace: 'qa', name: 'mine', database_connection_id: connId, sql: 'select count(*)::int as n from items' },
    a.token,
  )
  t.equal(made.status, 201, made.text)
  t.equal((await exec('qa/mine', {}, b.token)).status, 404, 'B does not see it')
  const denied = await exec('qa/mine', {}, a.token)
  t.equal(denied.status, 403, 'the connection is an admin area: A may not point a query at it unasked')
  t.match(denied.body, { code: 'query.connection_forbidden' })
  await env.sql(
    `insert into roles (name, permissions) values ('ext-users', '{"platform.database-connections/ext.use:all": true}'::jsonb)`,
  )
  await env.sql(`insert into user_roles (user_id, role_id) select $1, id from roles where name = 'ext-users'`, [a.id])
  const ok = await exec('qa/mine', {}, a.token)
  t.equal(ok.status, 200, ok.text)
  t.match(ok.body, { rows: [{ n: 3 }] })
})

t.test('execute without read runs a query; neither answers 404 like a query that does not exist', async (t) => {
  await mkQuery('counted', { sql: 'select count(*)::int as n from items' })
  const c = await env.createUser('query-exec-only@test.local')
  const d = await env.createUser('query-nothing@test.local')
  await env.sql(
    `insert into roles (name, permissions) values ('counted-runners', '{"platform.queries/db/counted.execute:all": true}'::jsonb)`,
  )
  await env.sql(`insert into user_roles (user_id, role_id) select $1, id from roles where name = 'counted-runners'`, [
    c.id,
  ])
  t.equal((await env.request('GET', '/api/v1/queries/db/counted', { token: c.token })).status, 404, 'C may not read it')
  const ok = await exec('db/counted', {}, c.token)
  t.equal(ok.status, 200, ok.text)
  t.match(ok.body, { rows: [{ n: Number }] })
  const denied = await exec('db/counted', {}, d.token)
  const missing = await exec('db/never-written', {}, d.token)
  t.equal(denied.status, 404)
  t.equal(missing.status, 404)
  t.equal(
    (denied.body as { code: string }).code,
    (missing.body as { code: string }).code,
    'the same answer: nothing leaks',
  )
})

t.test('a changed connection drops its pool in every process (NATS) and the next use sees the change', async (t) => {
  await mkQuery('where', { sql: 'select current_database() as db' })
  t.match((await exec('db/where')).body, { rows: [{ db: ext.database }] })
  const db = env.platform.db
  if (db === undefined) throw new Error('no db')
  const here = connectionPools({
    db,
    resources: env.platform.resources as never,
    config: env.config,
    log: createLogger({ level: 'silent' }),
  })
  t.equal(here.size(), 1, 'this process holds one pool')
  // "another process": its own database pool and NATS connection, the same prefix
  const services = readServices()
  const otherDb = await createDb(env.databaseUrl, { maximumPoolSize: 2 })
  const nc = await connect({ servers: services.natsUrl })
  t.teardown(async () => {
    await nc.close()
    await otherDb.end()
  })
  const there = connectionPools({
    db: otherDb,
    resources: env.platform.resources as never,
    config: env.config,
    log: createLogger({ level: 'silent' }),
  })
  const sub = subscribeInvalidations(nc as never, natsNames(env.config.NATS_PREFIX), there)
  t.teardown(() => sub.stop())
  await there.getPool(connId)
  await nc.flush()
  t.equal(there.size(), 1)
  const patched = await env.request('PATCH', `/api/v1/database-connections/${connId}`, {
    body: { database: other.database },
  })
  t.equal(patched.status, 200, patched.text)
  await eventually(
    async () => (here.size() === 0 && there.size() === 0 ? true : undefined),
    'both processes dropping the pool',
  )
  t.match((await exec('db/where')).body, { rows: [{ db: other.database }] }, 'the next execution uses the new settings')
  const removed = await env.request('DELETE', `/api/v1/database-connections/${connId}`)
  t.equal(removed.status, 204)
  await eventually(async () => (here.size() === 0 ? true : undefined), 'the pool of the deleted connection closing')
  const gone = await exec('db/where')
  t.equal(gone.status, 422)
  t.match(gone.body, { code: 'database.connection_not_found' })
})
