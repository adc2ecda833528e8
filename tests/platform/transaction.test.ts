import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { Type as T } from '@sinclair/typebox'
import { sql, transaction } from '../../src/platform/db.ts'
import { anyRows, rowType } from '../../src/platform/typed-rows.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The platform's one transaction helper (src/platform/db.ts `transaction`): commit, rollback, the
 * retry of work Postgres rolled back (class 40), and that it leaves no promise hooks behind in the
 * process (slonik's own `pool.transaction` runs in an AsyncLocalStorage, which on Node 20 installs
 * them for good: a tax on every promise of every request afterwards).
 */
const N = rowType(T.Object({ n: T.Integer() }, { title: 'n' }))
const ROOT = join(import.meta.dirname, '..', '..')

t.test('commits, rolls back on a throw, and runs again what Postgres rolled back', async (t) => {
  const env = await startTestPlatform(t)
  const db = env.platform.db
  if (db === undefined) throw new Error('no database')
  await db.query(sql.unsafe`create table tx_probe (n int not null)`)
  t.equal(
    await transaction(db, async (tx) => (await tx.query(sql.unsafe`insert into tx_probe values (1)`)).rowCount),
    1,
  )
  await t.rejects(
    transaction(db, async (tx) => {
      await tx.query(sql.unsafe`insert into tx_probe values (2)`)
      throw new Error('no')
    }),
    { message: 'no' },
  )
  let attempts = 0
  const result = await transaction(db, async (tx) => {
    attempts++
    await tx.query(sql.unsafe`insert into tx_probe values (${10 + attempts})`)
    if (attempts < 3) throw Object.assign(new Error('could not serialize access'), { code: '40001' })
    return 'done'
  })
  t.equal(result, 'done')
  t.equal(attempts, 3, 'a serialization failure is retried')
  await t.rejects(
    transaction(db, async () => {
      throw Object.assign(new Error('unique'), { code: '23505' })
    }),
    { code: '23505' },
    'any other error is not retried',
  )
  const rows = await anyRows(db, N, sql.unsafe`select n from tx_probe order by n`)
  t.same(
    rows.map((r) => r.n),
    [1, 13],
    'only the committed work stays: the throw and the two rolled-back attempts left nothing',
  )
})

t.test('a transaction leaves no promise hooks in the process', async (t) => {
  const env = await startTestPlatform(t)
  // In a process of its own: tap itself installs async hooks in this one. With no hooks, the code
  // after an `await` runs with execution async id 0; with promise hooks installed, with a fresh id.
  const script = `
    import { executionAsyncId } from 'node:async_hooks'
    import { createDb, sql, transaction } from './src/platform/db.ts'
    const probe = async () => { await null; return executionAsyncId() }
    const db = await createDb(process.env.PROBE_DB_URL, { maximumPoolSize: 1 })
    const before = await probe()
    await transaction(db, async (tx) => tx.query(sql.unsafe\`select 1\`))
    const after = await probe()
    await db.end()
    process.stdout.write(JSON.stringify({ before, after }))
  `
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', script],
    {
      cwd: ROOT,
      env: { ...process.env, PROBE_DB_URL: env.databaseUrl },
    },
  )
  t.same(JSON.parse(stdout), { before: 0, after: 0 })
})
