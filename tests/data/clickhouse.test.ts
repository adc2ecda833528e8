import t from 'tap'
import { startClickHouse, type ClickHouse } from '../helpers/clickhouse.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Queries on a real ClickHouse server (Debian's clickhouse-server, started by the test):
 * parameters bound as external data (injection stays data), `readonly=1` refusing writes in read
 * queries, `max_result_rows` stopping an endless table at the cap, `max_execution_time`, and write
 * queries.
 */
let env: TestPlatform
let connId = ''
// started before the tests are declared, so a machine without it skips them with the reason
const ch: ClickHouse = await startClickHouse(t)
const skip = ch.skip
const post = (path: string, body: unknown) => env.request('POST', path, { body })
const exec = (name: string, input: Record<string, unknown> = {}) => post(`/queries/ch/${name}/execute`, { input })
async function mkQuery(name: string, spec: Record<string, unknown>): Promise<void> {
  const r = await post('/api/v1/queries', { namespace: 'ch', name, database_connection_id: connId, ...spec })
  if (r.status !== 201) throw new Error(`query ${name}: ${r.text}`)
}

t.before(async () => {
  if (ch.skip !== false) return
  env = await startTestPlatform(t)
  await ch.sql('CREATE TABLE events (id UInt32, user String, amount Float64) ENGINE = Memory')
  await ch.sql("INSERT INTO events VALUES (1, 'ann', 10.5), (2, 'bob', 3), (3, 'ann', 1)")
  const r = await post('/api/v1/database-connections', {
    name: 'ch',
    connection_type: 'clickhouse',
    host: ch.host,
    port: ch.port,
    username: ch.user,
    password: ch.password,
    ssl_mode: 'disable',
    config: { max_pool_size: 2 },
  })
  if (r.status !== 201) throw new Error(r.text)
  connId = (r.body as { id: string }).id
})

t.test('connection test', { skip }, async (t) => {
  t.match((await post(`/api/v1/database-connections/${connId}/test`, {})).body, {
    success: true,
    server_version: /^ClickHouse \d+\./,
  })
  t.match(
    (
      await post('/api/v1/database-connections/test', {
        connection_type: 'clickhouse',
        host: ch.host,
        port: ch.port,
        username: ch.user,
        password: 'wrong',
        ssl_mode: 'disable',
      })
    ).body,
    { success: false, message: /password|Authentication|refused/i },
  )
})

t.test('parameters are bound (external data); injection stays data; :user_email is the caller', { skip }, async (t) => {
  await mkQuery('by-user', {
    sql: "SELECT id, amount, ':lit' AS lit, :user_email AS who FROM events WHERE user = :user AND amount >= :min ORDER BY id",
    input_schema: {
      type: 'object',
      properties: { user: { type: 'string' }, min: { type: 'number' } },
      required: ['user', 'min'],
    },
  })
  const r = await exec('by-user', { user: 'ann', min: 0 })
  t.equal(r.status, 200, r.text)
  t.match(r.body, {
    operation: 'read',
    row_count: 2,
    truncated: false,
    rows: [{ id: 1, amount: 10.5, lit: ':lit', who: 'admin@test.local' }, { id: 3 }],
  })
  for (const user of ["ann' OR '1'='1", "x'); DROP TABLE events; --", 'ann\\']) {
    const bad = await exec('by-user', { user, min: 0 })
    t.equal(bad.status, 200, bad.text)
    t.same((bad.body as { rows: unknown[] }).rows, [], `no rows for ${user}`)
  }
  t.equal((await ch.sql('SELECT count() FROM events')).trim(), '3', 'the table is intact')
})

t.test('readonly=1: a write through a read query is refused by the server', { skip }, async (t) => {
  await mkQuery('sneaky-insert', { sql: "INSERT INTO events VALUES (9, 'eve', 1)" })
  await mkQuery('sneaky-drop', { sql: 'DROP TABLE events' })
  for (const q of ['sneaky-insert', 'sneaky-drop']) {
    const r = await exec(q)
    t.equal(r.status, 422, r.text)
    t.match(r.body, { code: 'query.read_only', detail: /readonly/ })
  }
  t.equal((await ch.sql('SELECT count() FROM events')).trim(), '3')
})

t.test('max_result_rows: an endless table answers with max_rows rows', { skip }, async (t) => {
  await mkQuery('endless', { sql: 'SELECT number FROM system.numbers', max_rows: 7, timeout_ms: 5000 })
  const r = await exec('endless')
  t.equal(r.status, 200, r.text)
  t.match(r.body, { row_count: 7, truncated: true })
  t.same(
    (r.body as { rows: { number: number }[] }).rows.map((x) => x.number),
    [0, 1, 2, 3, 4, 5, 6],
  )
})

t.test('max_execution_time: a long statement ends with query.timeout', { skip }, async (t) => {
  await mkQuery('slow', { sql: 'SELECT count() AS n FROM system.numbers', timeout_ms: 500 })
  const r = await exec('slow')
  t.equal(r.status, 504, r.text)
  t.match(r.body, { code: 'query.timeout' })
})

t.test('write queries', { skip }, async (t) => {
  await mkQuery('add', {
    operation: 'write',
    sql: 'INSERT INTO events SELECT :id, :user, :amount',
    input_schema: {
      type: 'object',
      properties: { id: { type: 'integer' }, user: { type: 'string' }, amount: { type: 'number' } },
    },
  })
  const r = await exec('add', { id: 4, user: "o'brien", amount: 2.5 })
  t.equal(r.status, 200, r.text)
  t.match(r.body, { operation: 'write', rows: [] })
  t.same(JSON.parse(await ch.sql('SELECT user FROM events WHERE id = 4 FORMAT JSONEachRow')), { user: "o'brien" })
})
