import t from 'tap'
import type { DbTriggerInput } from '../../schemas/db-triggers.ts'
import { deliverable, operationPlan } from '../../src/db-triggers/operations.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { externalPostgres, type ExternalPg } from '../helpers/external-pg.ts'

/*
 * A database trigger's `operations` (INSERT, UPDATE or both), honoured where the table can tell
 * them apart: a created_column (equal to the poll column: INSERT, else UPDATE, per row), or a poll
 * column filled by a sequence (INSERT only). Elsewhere a single operation is refused at save (422
 * db_trigger.operations_undetectable) or, for a table that appears only later, at the poll
 * (recorded as the trigger's error); both operations are delivered as CHANGE.
 */
t.test('the plan and the delivered rows (pure)', async (t) => {
  t.equal(operationPlan(['INSERT'], 'created_at', { sequenced: false }), 'per-row')
  t.equal(operationPlan(['INSERT'], null, { sequenced: true }), 'insert-only')
  t.equal(operationPlan(['INSERT', 'UPDATE'], null, { sequenced: false }), 'change')
  t.throws(() => operationPlan(['INSERT'], null, { sequenced: false }), { code: 'db_trigger.operations_undetectable' })
  t.throws(() => operationPlan(['UPDATE'], null, { sequenced: true }), { code: 'db_trigger.operations_undetectable' })
  const batch = { rows: [{ id: 1 }, { id: 2 }, { id: 3 }], inserted: [true, false, true] }
  t.same(deliverable('per-row', ['INSERT', 'UPDATE'], batch), {
    rows: batch.rows,
    operation: 'CHANGE',
    row_operations: ['INSERT', 'UPDATE', 'INSERT'],
  })
  t.same(deliverable('per-row', ['INSERT'], batch), {
    rows: [{ id: 1 }, { id: 3 }],
    operation: 'INSERT',
    row_operations: ['INSERT', 'INSERT'],
  })
  t.same(deliverable('per-row', ['UPDATE'], batch), {
    rows: [{ id: 2 }],
    operation: 'UPDATE',
    row_operations: ['UPDATE'],
  })
  t.same(deliverable('insert-only', ['INSERT', 'UPDATE'], batch), { rows: batch.rows, operation: 'INSERT' })
  t.same(deliverable('change', ['INSERT', 'UPDATE'], batch), { rows: batch.rows, operation: 'CHANGE' })
})

async function connectionTo(env: TestPlatform, ext: ExternalPg, name: string): Promise<string> {
  const r = await env.request('POST', '/api/v1/database-connections', { body: { name, ...ext.spec } })
  if (r.status !== 201) throw new Error(`connection: ${r.text}`)
  return (r.body as { id: string }).id
}

t.test(
  'on a full platform: INSERT and UPDATE told apart by a created column, refused where they cannot be',
  async (t) => {
    // the database first: teardowns run last-in first-out, so the platform stops polling it before it is dropped
    const ext = await externalPostgres(t, 'dbtops')
    const env = await startTestPlatform(t)
    // both timestamps take the transaction's now() at INSERT; an UPDATE moves updated_at only
    await ext.sql(
      'create table orders (id serial primary key, total int not null, created_at timestamptz not null default now(), updated_at timestamptz not null default now())',
    )
    await ext.sql('insert into orders (total) values (0)')
    const connection = await connectionTo(env, ext, 'orders-db')
    t.equal(
      (
        await env.request('POST', '/api/v1/functions', {
          body: {
            namespace: 'dbt-ops',
            name: 'echo',
            code: 'def handler(input, context):\n    return {"n": input["count"]}\n',
          },
        })
      ).status,
      201,
    )
    const base = {
      database_connection_id: connection,
      table_name: 'orders',
      function_namespace: 'dbt-ops',
      function_name: 'echo',
      poll_interval_seconds: 1,
    }
    const create = (body: Record<string, unknown>) =>
      env.request('POST', '/api/v1/database-triggers', { body: { ...base, ...body } })

    // refused at save: the table cannot tell the one operation asked for
    const undetectable = await create({ name: 'x1', poll_column: 'updated_at', operations: ['INSERT'] })
    t.match(
      undetectable,
      { status: 422, body: { code: 'db_trigger.operations_undetectable' } },
      'INSERT only on a timestamp poll column without a created column',
    )
    t.match(
      await create({ name: 'x2', poll_column: 'updated_at', operations: ['UPDATE'] }),
      { status: 422, body: { code: 'db_trigger.operations_undetectable' } },
      'UPDATE only, likewise',
    )
    t.match(
      await create({ name: 'x3', poll_column: 'id', operations: ['UPDATE'] }),
      { status: 422, body: { code: 'db_trigger.operations_undetectable' } },
      'UPDATE only on a sequence column (it never moves on UPDATE)',
    )
    t.match(
      await create({ name: 'x4', poll_column: 'updated_at', operations: ['UPDATE'], created_column: 'nope' }),
      { status: 422, body: { code: 'db_trigger.column_not_found' } },
      'a created column that does not exist',
    )
    // saved without operations: what the table can tell
    t.match((await create({ name: 'by-id', poll_column: 'id', is_active: false })).body, {
      operations: ['INSERT'],
      created_column: null,
    })
    t.match((await create({ name: 'by-time', poll_column: 'updated_at', is_active: false })).body, {
      operations: ['INSERT', 'UPDATE'],
    })

    const names = ['ins', 'upd', 'both', 'change'] as const
    const ids: Record<string, string> = {}
    for (const [name, body] of [
      ['ins', { operations: ['INSERT'], created_column: 'created_at' }],
      ['upd', { operations: ['UPDATE'], created_column: 'created_at' }],
      ['both', { operations: ['INSERT', 'UPDATE'], created_column: 'created_at' }],
      ['change', { operations: ['INSERT', 'UPDATE'] }],
    ] as const) {
      const r = await create({ name, poll_column: 'updated_at', ...body })
      t.equal(r.status, 201, r.text)
      ids[name] = (r.body as { id: string }).id
    }
    for (const name of names) {
      await eventually(
        async () =>
          ((await env.request('GET', `/api/v1/database-triggers/${name}`)).body as { last_polled_at: string | null })
            .last_polled_at !== null
            ? true
            : undefined,
        `${name} activated`,
      )
    }
    const inputs = async (name: string) =>
      (
        await env.sql<{ input_data: DbTriggerInput }>(
          "select input_data from executions where trigger_id = $1 and status = 'completed' order by created_at",
          [ids[name]],
        )
      ).map((r) => r.input_data)
    const rowsOf = async (name: string, count: number) =>
      eventually(
        async () => {
          const all = await inputs(name)
          return all.reduce((n, i) => n + i.count, 0) >= count ? all : undefined
        },
        `${name} to deliver ${String(count)} rows`,
        60_000,
        200,
      )

    // two inserts (one transaction each), delivered before the update below
    await ext.sql('insert into orders (total) values (10)')
    await ext.sql('insert into orders (total) values (20)')
    const ins = await rowsOf('ins', 2)
    t.same(
      ins.flatMap((i) => i.rows.map((r) => r['id'])),
      [2, 3],
      'INSERT trigger: the inserted rows',
    )
    t.ok(
      ins.every((i) => i.operation === 'INSERT' && i.row_operations?.every((o) => o === 'INSERT')),
      'marked INSERT',
    )
    const bothInserts = await rowsOf('both', 2)
    t.ok(
      bothInserts.every((i) => i.operation === 'INSERT'),
      'both: the inserts are INSERT',
    )
    await rowsOf('change', 2)

    // an update of row 2 (a later transaction: updated_at moves away from created_at)
    await ext.sql('update orders set total = 11, updated_at = now() where id = 2')
    const upd = await rowsOf('upd', 1)
    t.equal(upd.length, 1, 'UPDATE trigger: the inserts were skipped, no call for them')
    t.match(upd[0], { operation: 'UPDATE', count: 1, row_operations: ['UPDATE'], rows: [{ id: 2, total: 11 }] })
    const both = await rowsOf('both', 3)
    t.match(both.at(-1), { operation: 'UPDATE', rows: [{ id: 2, total: 11 }] }, 'both: the update is UPDATE')
    const change = await rowsOf('change', 3)
    t.ok(
      change.every((i) => i.operation === 'CHANGE' && i.row_operations === undefined),
      'without a created column: CHANGE',
    )
    // the INSERT trigger passed over the updated row: its bookmark moved, nothing was called
    await eventually(async () => {
      const r = (await env.request('GET', '/api/v1/database-triggers/ins')).body as { last_poll_value: string | null }
      const [row] = await ext.sql<{ v: string }>('select updated_at::text as v from orders where id = 2')
      return r.last_poll_value === row?.v ? true : undefined
    }, 'the INSERT trigger to move past the update')
    t.equal(
      (await inputs('ins')).reduce((n, i) => n + i.count, 0),
      2,
      'and did not deliver it',
    )

    // a table that appears only after the save: the poll refuses the operation and records why
    const late = await create({
      name: 'late',
      table_name: 'later_orders',
      poll_column: 'updated_at',
      operations: ['INSERT'],
    })
    t.equal(late.status, 201, 'the table cannot be inspected at save')
    await ext.sql('create table later_orders (id serial primary key, updated_at timestamptz not null default now())')
    await eventually(
      async () => {
        const r = (await env.request('GET', '/api/v1/database-triggers/late')).body as { error_message: string | null }
        return r.error_message?.startsWith('db_trigger.operations_undetectable') === true ? true : undefined
      },
      'the poll to record operations_undetectable',
      30_000,
      200,
    )
  },
)
