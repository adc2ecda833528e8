import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { externalPostgres, type ExternalPg } from '../helpers/external-pg.ts'
import { startSnowflakeFake, type SnowflakeFake } from '../helpers/snowflake-fake.ts'

/*
 * The Snowflake driver against a local server playing Snowflake's REST SQL API (no Snowflake is
 * reachable here; tests/helpers/snowflake-fake.ts executes the statements on a real Postgres
 * database): bearer auth, positional bindings, the LIMIT wrapping of reads, the read role,
 * partitions, asynchronous statements polled to the end, and the timeout.
 */
let env: TestPlatform
let ext: ExternalPg
let sf: SnowflakeFake
let connId = ''
const TOKEN = 'oauth-token-for-the-fake'
const post = (path: string, body: unknown) => env.request('POST', path, { body })
const exec = (name: string, input: Record<string, unknown> = {}) => post(`/queries/sf/${name}/execute`, { input })
async function mkQuery(name: string, spec: Record<string, unknown>): Promise<void> {
  const r = await post('/api/v1/queries', { namespace: 'sf', name, database_connection_id: connId, ...spec })
  if (r.status !== 201) throw new Error(`query ${name}: ${r.text}`)
}

t.before(async () => {
  env = await startTestPlatform(t)
  ext = await externalPostgres(t, 'snow')
  await ext.sql('create table orders (id int, customer text, total numeric(10,2), paid boolean)')
  await ext.sql("insert into orders values (1, 'acme', 10.50, true), (2, 'acme', 3, false), (3, 'zeta', 7, true)")
  await ext.sql(
    'create function sneaky() returns int language sql as $$ insert into orders (id) values (99) returning id $$',
  )
  sf = await startSnowflakeFake({
    databaseUrl: ext.url,
    token: TOKEN,
    syncWaitMs: 300,
    partitionRows: 2,
    readOnlyRoles: ['READER'],
  })
  t.teardown(() => sf.close())
  const r = await post('/api/v1/database-connections', {
    name: 'snow',
    connection_type: 'snowflake',
    host: '127.0.0.1',
    port: sf.port,
    database: 'SALES',
    password: TOKEN,
    ssl_mode: 'disable',
    config: { warehouse: 'WH', schema: 'PUBLIC', role: 'WRITER', read_role: 'READER' },
  })
  if (r.status !== 201) throw new Error(r.text)
  connId = (r.body as { id: string }).id
})

t.test('connection test: bearer token and token type; a wrong token fails', async (t) => {
  t.match((await post(`/api/v1/database-connections/${connId}/test`, {})).body, {
    success: true,
    server_version: 'Snowflake 8.40.1-fake',
  })
  const last = sf.requests.at(-1)
  t.equal(last?.headers['authorization'], `Bearer ${TOKEN}`)
  t.equal(last?.headers['x-snowflake-authorization-token-type'], 'OAUTH')
  const bad = await post('/api/v1/database-connections/test', {
    connection_type: 'snowflake',
    host: '127.0.0.1',
    port: sf.port,
    password: 'wrong',
    ssl_mode: 'disable',
  })
  t.match(bad.body, { success: false, message: /refused the login/ })
})

t.test('positional bindings; the statement text holds no value; typed results', async (t) => {
  await mkQuery('by-customer', {
    sql: 'select id, total, paid, :user_id as uid from orders where customer = :customer order by id',
    input_schema: { type: 'object', properties: { customer: { type: 'string' } } },
  })
  const r = await exec('by-customer', { customer: 'acme' })
  t.equal(r.status, 200, r.text)
  t.match(r.body, {
    operation: 'read',
    row_count: 2,
    truncated: false,
    rows: [
      { ID: 1, TOTAL: '10.50', PAID: true, UID: env.adminId },
      { ID: 2, PAID: false },
    ],
  })
  const sent = sf.requests.filter((x) => x.method === 'POST' && typeof x.body?.['statement'] === 'string').at(-1)
    ?.body as Record<string, unknown>
  t.match(
    sent['statement'],
    /^SELECT \* FROM \(select id, total, paid, \? as uid from orders where customer = \? order by id\n\) AS platform_read LIMIT 1001$/,
  )
  t.same(sent['bindings'], { '1': { type: 'TEXT', value: env.adminId }, '2': { type: 'TEXT', value: 'acme' } })
  t.match(sent, {
    role: 'READER',
    warehouse: 'WH',
    database: 'SALES',
    schema: 'PUBLIC',
    timeout: 5,
    parameters: { MULTI_STATEMENT_COUNT: '1' },
  })
  const injected = await exec('by-customer', { customer: "acme' or '1'='1" })
  t.same((injected.body as { rows: unknown[] }).rows, [], 'an injection attempt is a value')
})

t.test(
  'reads cannot write: DML is a syntax error inside the wrapping, a writing function meets the read role',
  async (t) => {
    await mkQuery('sneaky-delete', { sql: 'delete from orders' })
    const d = await exec('sneaky-delete')
    t.equal(d.status, 422, d.text)
    t.match(d.body, { code: 'query.failed' })
    await mkQuery('sneaky-fn', { sql: 'select sneaky() as id' })
    const f = await exec('sneaky-fn')
    t.equal(f.status, 422, f.text)
    t.match(f.body, { code: 'query.read_only' })
    t.equal((await ext.sql<{ n: number }>('select count(*)::int as n from orders'))[0]?.n, 3, 'nothing was written')
  },
)

t.test('max_rows: LIMIT max_rows + 1 at the warehouse, partitions fetched as needed', async (t) => {
  await mkQuery('endless', { sql: 'select generate_series(1, 1000000000000) as g', max_rows: 5 })
  const r = await exec('endless')
  t.equal(r.status, 200, r.text)
  t.match(r.body, { row_count: 5, truncated: true })
  t.same(
    (r.body as { rows: { G: number }[] }).rows.map((x) => x.G),
    [1, 2, 3, 4, 5],
  )
  t.ok(
    sf.requests.some((x) => x.method === 'GET' && /partition=2/.test(x.path)),
    'later partitions were fetched',
  )
})

t.test('timeout: a statement past its timeout is polled (202) and ends with query.timeout', async (t) => {
  await mkQuery('slow', { sql: 'select pg_sleep(5) as s', timeout_ms: 1000 })
  const r = await exec('slow')
  t.equal(r.status, 504, r.text)
  t.match(r.body, { code: 'query.timeout' })
  t.ok(
    sf.requests.some((x) => x.method === 'GET' && /^\/api\/v2\/statements\/[0-9a-f-]+$/.test(x.path)),
    'the running statement was polled',
  )
})

t.test('write queries use the write role and report affected rows', async (t) => {
  await mkQuery('add', {
    operation: 'write',
    sql: 'insert into orders (id, customer, total, paid) values (:id, :customer, 1, false)',
    input_schema: { type: 'object', properties: { id: { type: 'integer' }, customer: { type: 'string' } } },
  })
  const r = await exec('add', { id: 4, customer: 'new' })
  t.equal(r.status, 200, r.text)
  t.match(r.body, { operation: 'write', affected_rows: 1 })
  t.match(sf.requests.at(-1)?.body, { role: 'WRITER', bindings: { '1': { type: 'FIXED', value: '4' } } })
  t.equal((await ext.sql<{ n: number }>("select count(*)::int as n from orders where customer = 'new'"))[0]?.n, 1)
})
