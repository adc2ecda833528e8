import { randomUUID } from 'node:crypto'
import t from 'tap'
import { DB_TRIGGER_POLL_SUBJECT } from '../../actors/protocols/db-trigger.ts'
import { pollRows } from '../../src/db-triggers/store.ts'
import type { Db } from '../../src/platform/db.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The fence of a database trigger: every poll write carries the lease revision of the
 * actor that asked for the poll, and the row keeps the highest one seen. A host that lost its lease
 * still holds an older revision, so its writes — claiming the trigger, recording a pending batch,
 * moving the bookmark — must change nothing, or it could move the bookmark back over rows the new
 * owner already delivered. Checked on the store functions against the platform's real database,
 * and end to end: a poll request with an older fence is answered `stale` before it reads a row.
 */
t.test('writes with an older fence than the stored one are refused', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const db = env.platform.db as Db
  // the connection is never reached: the fence is checked before the trigger's target is
  const [row] = await env.sql<{ id: string }>(
    `insert into db_triggers (name, owner_id, database_connection_id, table_name, function_namespace, function_name, poll_column, last_poll_value, bookmark_set)
     values ('fenced', $1, $2, 'events', 'dbt', 'sink', 'id', '10', true) returning id`,
    [env.adminId, randomUUID()],
  )
  const id = (row as { id: string }).id
  const stored = async () =>
    (
      await env.sql<{
        fence: string
        last_poll_value: string | null
        pending_until: string | null
        error_message: string | null
      }>('select fence::text, last_poll_value, pending_until, error_message from db_triggers where id = $1', [id])
    )[0]

  const current = pollRows(db, id, 7)
  t.equal(await current.claim(), true, 'lease revision 7 claims the trigger')
  t.equal(await current.advance('20'), true, 'and moves the bookmark')
  t.match(await stored(), { fence: '7', last_poll_value: '20' })

  const old = pollRows(db, id, 3)
  t.equal(await old.claim(), false, 'revision 3 cannot claim it back')
  t.equal(await old.pending('15'), false, 'nor record a pending batch')
  t.equal(await old.advance('15'), false, 'nor move the bookmark (back)')
  t.equal(await old.initialize(null), false, 'nor reset it')
  t.equal(await old.failed('stale host'), false, 'nor record an error')
  t.equal(await old.idle(), false, 'nor mark a poll')
  t.match(
    await stored(),
    { fence: '7', last_poll_value: '20', pending_until: null, error_message: null },
    'the row is as revision 7 left it',
  )

  // a newer lease takes over: from then on 7 is the stale one
  t.equal(await pollRows(db, id, 9).claim(), true, 'revision 9 claims it')
  t.equal(await current.advance('25'), false, 'revision 7 is refused now')
  t.match(await stored(), { fence: '9', last_poll_value: '20' })

  // end to end: the poll the actor asks for over NATS, with an older revision than the row's
  const names = natsNames(env.config.NATS_PREFIX)
  const ask = async (fence: number) =>
    (
      await env.platform.nc.request(names.subject(DB_TRIGGER_POLL_SUBJECT), JSON.stringify({ trigger_id: id, fence }), {
        timeout: 10_000,
      })
    ).json<{ ok: boolean; status?: string }>()
  t.match(await ask(8), { ok: true, status: 'stale' }, 'a poll with revision 8 < 9 is answered stale')
  t.match(
    await stored(),
    { fence: '9', last_poll_value: '20', pending_until: null, error_message: null },
    'and wrote nothing',
  )
})
