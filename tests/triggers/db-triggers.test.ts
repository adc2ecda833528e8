import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import pg from 'pg'
import t from 'tap'
import { DB_TRIGGER_POLL_SUBJECT, dbTriggerProtocol } from '../../actors/protocols/db-trigger.ts'
import { partitionOf } from '../../actors/runtime/hash.ts'
import { provisionActors } from '../../actors/runtime/provision.ts'
import type { DbTriggerInput } from '../../schemas/db-triggers.ts'
import { decodeState } from '../../src/jobs/job-state.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import { natsNames, type NatsNames } from '../../src/platform/nats-names.ts'
import { uuidV5 } from '../../src/kernel/uuid.ts'
import { kill9, spawnReady, terminate } from '../helpers/child.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { externalPostgres, type ExternalPg } from '../helpers/external-pg.ts'
import { partitionOwners } from '../helpers/lease-owners.ts'

/*
 * Database triggers against a real second database on the test cluster:
 *  1. 10,000 rows from 4 concurrent writers (single inserts and multi-statement transactions) while
 *     the actor host polling the trigger is killed with SIGKILL while they are still inserting: every row reaches the function
 *     exactly once, in bookmark order within and across batches, no batch above batch_size, one job
 *     per batch with the id derived from (trigger, bookmark before, bookmark after). The jobs are
 *     read from JOBS (no workers run, so they stay there).
 *  2. On a full platform (workers run the function in its sandbox): no backfill on first
 *     activation, the batch input, a timestamptz poll column, is_active false stops polling (and
 *     true resumes from the bookmark), errors recorded and backed off (doubling, capped), and B's
 *     404 on A's trigger.
 */
const HOST = join(import.meta.dirname, 'db-trigger-host.ts')
const LEASE_TTL_MS = 3000
const HOST_TICK_MS = 300
// two platforms, three host processes and 10,000 rows on a shared 2-core machine: more than the default 180 s
t.setTimeout(420_000)

interface Job {
  id: string
  triggerId: string
  input: DbTriggerInput
}

/** Every function job in JOBS (with how many messages carried each id). */
async function jobsInStream(
  nc: NatsConnection,
  names: NatsNames,
): Promise<{ jobs: Job[]; copies: Map<string, number> }> {
  const jsm = await jetstreamManager(nc)
  const info = await jsm.streams.info(names.stream('JOBS'))
  const jobs: Job[] = []
  const copies = new Map<string, number>()
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(names.stream('JOBS'), { seq }).catch(() => null)
    if (m === null || m.data.length === 0) continue
    const s = decodeState(m.data)
    copies.set(s.id, (copies.get(s.id) ?? 0) + 1)
    jobs.push({ id: s.id, triggerId: s.trigger_id, input: s.input as DbTriggerInput })
  }
  return { jobs, copies }
}

/** A connection to the external database (admin: connections are admin-only). */
async function connectionTo(env: TestPlatform, ext: ExternalPg, name: string): Promise<string> {
  const r = await env.request('POST', '/api/v1/database-connections', { body: { name, ...ext.spec } })
  if (r.status !== 201) throw new Error(`connection: ${r.text}`)
  return (r.body as { id: string }).id
}

const bookmarkOf = async (env: TestPlatform, name: string, token?: string): Promise<string | null> => {
  const r = await env.request('GET', `/api/v1/database-triggers/${name}`, token === undefined ? {} : { token })
  return (r.body as { last_poll_value: string | null }).last_poll_value
}

t.test(
  '10,000 rows from 4 writers, the polling host killed -9: every row exactly once, in order, batches ≤ batch_size',
  async (t) => {
    // no workers role: the jobs stay in JOBS, where their inputs are read
    const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
    const names = natsNames(env.config.NATS_PREFIX)
    const nc = env.platform.nc
    await provisionActors(nc, names, { leaseTtlMs: LEASE_TTL_MS })
    const leases = await new Kvm(nc).open(names.bucket('ACTOR_LEASES'))
    const ext = await externalPostgres(t, 'dbtrig')
    await ext.sql(
      'create table events (id bigserial primary key, writer int not null, n int not null, at timestamptz not null default clock_timestamp())',
    )
    await ext.sql('insert into events (writer, n) values (0, 0)') // id 1: the bookmark at activation

    const hosts = new Map<string, ChildProcess>()
    await Promise.all(
      ['host-a', 'host-b', 'host-c'].map(async (id) => {
        const { proc } = await spawnReady(t, HOST, {
          NATS_URL: env.config.NATS_URL,
          NATS_PREFIX: env.config.NATS_PREFIX,
          NODE_ID: id,
          LEASE_TTL_MS: String(LEASE_TTL_MS),
          TICK_MS: String(HOST_TICK_MS),
        })
        hosts.set(id, proc)
      }),
    )
    const owners = () => partitionOwners(leases, 'db-trigger')
    await eventually(
      async () => {
        const o = await owners()
        return o.size === dbTriggerProtocol.partitions && new Set(o.values()).size === 3 ? o : undefined
      },
      'the db-trigger partitions shared by three hosts',
      30_000,
    )

    const connection = await connectionTo(env, ext, 'events-db')
    t.equal(
      (
        await env.request('POST', '/api/v1/functions', {
          body: { namespace: 'dbt', name: 'sink', code: 'def handler(input, context):\n    return input["count"]\n' },
        })
      ).status,
      201,
      'the function',
    )
    const created = await env.request('POST', '/api/v1/database-triggers', {
      body: {
        name: 'events',
        database_connection_id: connection,
        table_name: 'events',
        poll_column: 'id',
        operations: ['INSERT'],
        function_namespace: 'dbt',
        function_name: 'sink',
        batch_size: 100,
        poll_interval_seconds: 1,
      },
    })
    t.equal(created.status, 201, created.text)
    const trigger = created.body as { id: string }
    await eventually(
      async () => ((await bookmarkOf(env, 'events')) === '1' ? true : undefined),
      'the first activation to set the bookmark to MAX(id)',
    )

    // 4 writers × 2,500 rows: single-row and multi-row autocommit inserts, and two-statement transactions.
    // Paced to spread over WRITE_MS: unpaced they finish in a few seconds, before the poll has got far
    // enough to kill its host, and the kill must land while rows are still being inserted (a takeover
    // racing open transactions and new commits is the case the commit horizon and the fence are for).
    const WRITERS = 4
    const PER_WRITER = 2500
    const WRITE_MS = 20_000
    const started = Date.now()
    const since = () => `${String(Date.now() - started)} ms`
    const writer = async (w: number) => {
      const c = new pg.Client({ connectionString: ext.url })
      await c.connect()
      try {
        let n = 0
        for (let step = 0; n < PER_WRITER; step++) {
          const due = started + (n / PER_WRITER) * WRITE_MS
          if (due > Date.now()) await sleep(due - Date.now())
          const k = Math.min(1 + ((step * 7 + w) % 6), PER_WRITER - n)
          if (step % 3 === 2 && k > 1) {
            await c.query('begin')
            await c.query('insert into events (writer, n) select $1, g from generate_series($2::int, $3::int) g', [
              w,
              n,
              n + Math.floor(k / 2) - 1,
            ])
            await c.query('insert into events (writer, n) select $1, g from generate_series($2::int, $3::int) g', [
              w,
              n + Math.floor(k / 2),
              n + k - 1,
            ])
            await c.query('commit')
          } else {
            await c.query('insert into events (writer, n) select $1, g from generate_series($2::int, $3::int) g', [
              w,
              n,
              n + k - 1,
            ])
          }
          n += k
        }
      } finally {
        await c.end()
      }
    }
    let writersDone = false
    const writing = (async () => {
      await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w + 1)))
      writersDone = true
      t.comment(`writers done at ${since()}`)
    })()

    // kill -9 the host owning the trigger's partition once about a quarter has been delivered, with
    // the writers still inserting
    const partition = partitionOf(trigger.id, dbTriggerProtocol.partitions)
    await eventually(
      async () => (Number((await bookmarkOf(env, 'events')) ?? 0) >= 2500 ? true : undefined),
      '2,500 rows delivered',
      120_000,
      100,
    )
    const victim = (await owners()).get(partition) as string
    await kill9(hosts.get(victim) as ChildProcess)
    const killedAtBookmark = Number(await bookmarkOf(env, 'events'))
    const [{ written }] = (await ext.sql<{ written: string }>(
      'select (count(*) - 1)::text as written from events',
    )) as [{ written: string }]
    t.comment(
      `killed ${victim} (owner of db-trigger.${String(partition)}) at bookmark ${String(killedAtBookmark)}, ${written} rows written, ${since()}`,
    )
    t.notOk(writersDone, 'the host was killed while the writers were still inserting')
    await writing
    const [{ max }] = (await ext.sql<{ max: string }>('select max(id)::text as max from events')) as [{ max: string }]
    t.equal(max, String(1 + WRITERS * PER_WRITER), '10,000 rows written after the seed row')
    let lastLog = 0
    await eventually(
      async () => {
        const r = await env.request('GET', '/api/v1/database-triggers/events')
        if (Date.now() - lastLog > 5000) {
          lastLog = Date.now()
          const st = await (await new Kvm(nc).open(names.bucket('ACTOR_STATE'))).get(`db-trigger.${trigger.id}`)
          t.comment(
            `progress: ${r.text.slice(0, 400)} owners ${String((await owners()).get(partition))} state ${st?.string() ?? 'none'}`,
          )
        }
        return (r.body as { last_poll_value: string }).last_poll_value === max ? true : undefined
      },
      'the bookmark to reach the last row',
      100_000,
      200,
    )
    t.comment(`all delivered at ${since()}`)
    const newOwner = (await owners()).get(partition)
    t.ok(newOwner !== undefined && newOwner !== victim, `the partition was taken over (${String(newOwner)})`)
    for (const p of hosts.values()) await terminate(p)

    // ---- the verdict
    const { jobs, copies } = await jobsInStream(nc, names)
    const mine = jobs.filter((j) => j.triggerId === trigger.id)
    const batches = mine
      .map((j) => ({ id: j.id, input: j.input, ids: j.input.rows.map((r) => Number(r['id'])) }))
      .sort((a, b) => (a.ids[0] ?? 0) - (b.ids[0] ?? 0))
    const all = batches.flatMap((b) => b.ids)
    t.equal(all.length, WRITERS * PER_WRITER, 'as many rows delivered as written')
    t.equal(new Set(all).size, all.length, 'no row twice')
    t.same(
      [...all].sort((a, b) => a - b),
      Array.from({ length: WRITERS * PER_WRITER }, (_, i) => i + 2),
      'every row from 2 to 10001, none missing',
    )
    t.ok(
      batches.every((b) => b.ids.length >= 1 && b.ids.length <= 100 && b.input.count === b.ids.length),
      'every batch holds 1–100 rows and says how many',
    )
    t.ok(
      batches.every((b) => b.ids.every((x, i) => i === 0 || x > (b.ids[i - 1] as number))),
      'rows in bookmark order within each batch',
    )
    t.ok(
      batches.every(
        (b, i) => i === 0 || (b.ids[0] as number) > ((batches[i - 1] as { ids: number[] }).ids.at(-1) as number),
      ),
      'batches do not overlap',
    )
    t.ok(
      batches.every(
        (b) =>
          b.input.table === 'public.events' &&
          b.input.operation === 'INSERT' &&
          b.input.poll_column === 'id' &&
          !Number.isNaN(Date.parse(b.input.timestamp)),
      ),
      'the batch input',
    )
    t.ok(
      batches.every(
        (b, i) =>
          b.id ===
          uuidV5(
            `dbtrig:${trigger.id}:0:${i === 0 ? '1' : String((batches[i - 1] as { ids: number[] }).ids.at(-1))}:${String(b.ids.at(-1))}`,
          ),
      ),
      'each job id is derived from the trigger and the bookmarks before and after its batch',
    )
    t.ok(
      mine.every((j) => copies.get(j.id) === 1),
      'each job published once',
    )
    t.ok(
      batches.every((b) => !b.input.rows.some((r) => '__platform_bookmark' in r || '__platform_settled' in r)),
      "the poll's own columns are not passed on",
    )
    t.comment(
      `${String(batches.length)} batches (largest ${String(Math.max(...batches.map((b) => b.ids.length)))} rows)`,
    )
  },
)

t.test(
  'on a full platform: no backfill, is_active, backoff, timestamptz bookmarks, and B sees nothing of A',
  async (t) => {
    // the database first: teardowns run last-in first-out, so the platform stops polling it before it is dropped
    const ext = await externalPostgres(t, 'dbtrig')
    const env = await startTestPlatform(t, { DB_TRIGGER_BACKOFF_MAX_SECONDS: '4' })
    const names = natsNames(env.config.NATS_PREFIX)
    const nc = env.platform.nc
    await ext.sql(
      'create table items (id serial primary key, label text not null, at timestamptz not null default clock_timestamp())',
    )
    await ext.sql("insert into items (label) select 'old-' || g from generate_series(1, 5) g")
    const connection = await connectionTo(env, ext, 'items-db')
    const other = await connectionTo(env, ext, 'not-granted')
    const a = await env.createUser('dbt-a@test.local')
    const b = await env.createUser('dbt-b@test.local')
    await env.sql('insert into roles (name, permissions) values ($1, jsonb_build_object($2::text, true))', [
      'use-items-db',
      'platform.database-connections/items-db.use:all',
    ])
    await env.sql('insert into user_roles (user_id, role_id) select $1, id from roles where name = $2', [
      a.id,
      'use-items-db',
    ])
    const asA = (method: string, path: string, body?: unknown) =>
      env.request(method, path, { token: a.token, ...(body === undefined ? {} : { body }) })
    const asB = (method: string, path: string, body?: unknown) =>
      env.request(method, path, { token: b.token, ...(body === undefined ? {} : { body }) })
    t.equal(
      (
        await asA('POST', '/api/v1/functions', {
          namespace: 'dbt-a',
          name: 'echo',
          code: 'def handler(input, context):\n    return {"count": input["count"], "ids": [r["id"] for r in input["rows"]], "trigger": context["trigger_type"]}\n',
        })
      ).status,
      201,
    )

    // every poll request the actors send, per trigger id (times in ms)
    const polls = new Map<string, number[]>()
    const sub = nc.subscribe(names.subject(DB_TRIGGER_POLL_SUBJECT), {
      callback: (_e, m) => {
        const id = m.json<{ trigger_id: string }>().trigger_id
        polls.set(id, [...(polls.get(id) ?? []), Date.now()])
      },
    })
    t.teardown(() => sub.unsubscribe())

    // refused at once
    const base = {
      name: 'items',
      database_connection_id: connection,
      table_name: 'items',
      poll_column: 'id',
      function_namespace: 'dbt-a',
      function_name: 'echo',
      batch_size: 2,
      poll_interval_seconds: 1,
    }
    t.equal(
      (await asA('POST', '/api/v1/database-triggers', { ...base, batch_size: 0 })).status,
      422,
      'batch_size below 1',
    )
    t.equal(
      (await asA('POST', '/api/v1/database-triggers', { ...base, batch_size: 10001 })).status,
      422,
      'batch_size above 10000',
    )
    t.equal(
      (await asA('POST', '/api/v1/database-triggers', { ...base, poll_interval_seconds: 3601 })).status,
      422,
      'poll interval above 3600',
    )
    t.equal(
      (await asA('POST', '/api/v1/database-triggers', { ...base, operations: ['DELETE'] })).status,
      422,
      'DELETE cannot be detected',
    )
    const forbidden = await asA('POST', '/api/v1/database-triggers', { ...base, database_connection_id: other })
    t.match(forbidden, { status: 403, body: { code: 'db_trigger.connection_forbidden' } }, 'a connection A may not use')
    t.equal((await asB('POST', '/api/v1/database-triggers', base)).status, 404, "B may not call A's function")

    const items = await asA('POST', '/api/v1/database-triggers', { ...base, operations: ['INSERT'] })
    t.equal(items.status, 201, items.text)
    const itemsId = (items.body as { id: string }).id
    t.match(items.body, {
      name: 'items',
      schema_name: 'public',
      operations: ['INSERT'],
      batch_size: 2,
      poll_interval_seconds: 1,
      is_active: true,
      owner_id: a.id,
    })
    t.equal((await asA('POST', '/api/v1/database-triggers', base)).status, 409, 'a name is unique per user')
    // a witness on the same table, bookmarked by a timestamptz column
    const witness = await asA('POST', '/api/v1/database-triggers', {
      ...base,
      name: 'witness',
      poll_column: 'at',
      batch_size: 100,
    })
    t.equal(witness.status, 201, witness.text)
    const witnessId = (witness.body as { id: string }).id
    await eventually(
      async () => ((await bookmarkOf(env, 'items', a.token)) === '5' ? true : undefined),
      'no backfill: the bookmark set to MAX(id) = 5',
    )
    await eventually(
      async () => ((await bookmarkOf(env, 'witness', a.token)) !== null ? true : undefined),
      'the witness activated',
    )

    /** The row ids each trigger's completed executions got, and their inputs. */
    const delivered = async (triggerId: string) => {
      const rows = await env.sql<{
        input_data: DbTriggerInput
        output_data: { ids: number[]; trigger: string } | null
        status: string
      }>(
        "select input_data, output_data, status from executions where trigger_id = $1 and status = 'completed' order by (input_data->'rows'->0->>'id')::int",
        [triggerId],
      )
      return { ids: rows.flatMap((r) => r.input_data.rows.map((x) => Number(x['id']))), rows }
    }
    await ext.sql("insert into items (label) values ('new-6'), ('new-7'), ('new-8')")
    const first = await eventually(
      async () => {
        const d = await delivered(itemsId)
        return d.ids.length >= 3 ? d : undefined
      },
      'rows 6–8 to reach the function',
      60_000,
      200,
    )
    t.same(first.ids, [6, 7, 8], 'only the rows inserted after activation, each once, in order')
    t.ok(
      first.rows.every((r) => r.input_data.rows.length <= 2),
      'batch_size 2 respected',
    )
    t.match(first.rows[0]?.input_data, {
      table: 'public.items',
      operation: 'INSERT',
      poll_column: 'id',
      count: 2,
      rows: [
        { id: 6, label: 'new-6' },
        { id: 7, label: 'new-7' },
      ],
    })
    t.ok(
      typeof first.rows[0]?.input_data.rows[0]?.['at'] === 'string' &&
        !Number.isNaN(Date.parse(String(first.rows[0]?.input_data.timestamp))),
      'row values and the timestamp are JSON (ISO 8601)',
    )
    t.match(first.rows[0]?.output_data, { ids: [6, 7], trigger: 'database_trigger' }, 'the function ran with the input')
    t.same(
      (
        await eventually(async () => {
          const d = await delivered(witnessId)
          return d.ids.length >= 3 ? d : undefined
        }, 'the witness to see rows 6–8')
      ).ids,
      [6, 7, 8],
      'a timestamptz poll column works the same',
    )

    // is_active false stops polling: the actor clears its timer; rows written meanwhile wait
    t.equal((await asA('PATCH', '/api/v1/database-triggers/items', { is_active: false })).status, 200, 'deactivated')
    const states = await new Kvm(nc).open(names.bucket('ACTOR_STATE'))
    await eventually(async () => {
      const e = await states.get(`db-trigger.${itemsId}`)
      const s = e?.json<{ state: { active: boolean }; timers: Record<string, number> }>()
      return s !== undefined && !s.state.active && Object.keys(s.timers).length === 0 ? true : undefined
    }, 'the items actor to stop')
    const pollsWhenStopped = polls.get(itemsId)?.length ?? 0
    await ext.sql("insert into items (label) values ('while-off-9'), ('while-off-10')")
    // the witness delivering rows 9 and 10 is the clock: items had every chance to poll meanwhile
    await eventually(
      async () => ((await delivered(witnessId)).ids.length >= 5 ? true : undefined),
      'the witness to see rows 9 and 10',
      60_000,
      200,
    )
    t.equal(polls.get(itemsId)?.length ?? 0, pollsWhenStopped, 'no poll of an inactive trigger')
    t.equal(await bookmarkOf(env, 'items', a.token), '8', 'its bookmark stays')
    t.same((await delivered(itemsId)).ids, [6, 7, 8], 'nothing delivered while inactive')
    t.equal((await asA('PATCH', '/api/v1/database-triggers/items', { is_active: true })).status, 200, 'reactivated')
    const resumed = await eventually(
      async () => {
        const d = await delivered(itemsId)
        return d.ids.length >= 5 ? d : undefined
      },
      'items to resume from its bookmark',
      60_000,
      200,
    )
    t.same(
      resumed.ids,
      [6, 7, 8, 9, 10],
      'reactivated: the rows written while inactive, from the bookmark on (no reset)',
    )

    // B sees nothing of A's; the admin does, by owner_id
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { batch_size: 5 }],
      ['DELETE', undefined],
    ] as const) {
      t.equal((await asB(method, '/api/v1/database-triggers/items', body)).status, 404, `B ${method} A's trigger: 404`)
      t.equal(
        (await asB(method, `/api/v1/database-triggers/items?owner_id=${a.id}`, body)).status,
        404,
        `B ${method} A's trigger by owner_id: 404`,
      )
    }
    t.same(((await asB('GET', '/api/v1/database-triggers?all=true')).body as unknown[]).length, 0, "B's list is empty")
    t.match(await env.request('GET', `/api/v1/database-triggers/items?owner_id=${a.id}`), {
      status: 200,
      body: { last_poll_value: '10', error_message: null },
    })
    t.equal(((await asA('GET', '/api/v1/database-triggers')).body as unknown[]).length, 2)

    // errors: recorded, backed off (interval 1 s doubling: 2, 4, then capped at DB_TRIGGER_BACKOFF_MAX_SECONDS=4)
    const broken = await asA('POST', '/api/v1/database-triggers', { ...base, name: 'broken', table_name: 'later' })
    t.equal(broken.status, 201, broken.text)
    const brokenId = (broken.body as { id: string }).id
    const seen = await eventually(
      async () => {
        const times = polls.get(brokenId) ?? []
        return times.length >= 5 ? times.slice(0, 5) : undefined
      },
      'five polls of the broken trigger',
      60_000,
      100,
    )
    const gaps = seen.slice(1).map((x, i) => x - (seen[i] as number))
    t.comment(`gaps between failed polls: ${JSON.stringify(gaps)} ms`)
    t.ok(
      gaps.every((g, i) => g >= [2000, 4000, 4000, 4000][i]! - 50),
      'each retry waits at least interval × 2^failures (capped)',
    )
    t.ok(
      (gaps[2] ?? 0) < 7500 && (gaps[3] ?? 0) < 7500,
      'capped at DB_TRIGGER_BACKOFF_MAX_SECONDS (no 8 s or 16 s wait)',
    )
    t.match((await asA('GET', '/api/v1/database-triggers/broken')).body, {
      error_message: /db_trigger\.column_not_found/,
      last_poll_value: null,
    })
    // fixed: the next poll activates it (an empty table: from its first row on) and clears the error
    await ext.sql('create table later (id serial primary key, note text)')
    await eventually(
      async () => {
        const r = (await asA('GET', '/api/v1/database-triggers/broken')).body as {
          error_message: string | null
          last_polled_at: string | null
        }
        return r.error_message === null && r.last_polled_at !== null ? true : undefined
      },
      'the broken trigger to recover',
      30_000,
      200,
    )
    await ext.sql("insert into later (note) values ('first')")
    t.same(
      (
        await eventually(
          async () => {
            const d = await delivered(brokenId)
            return d.ids.length >= 1 ? d : undefined
          },
          'the first row of a table that was empty at activation',
          60_000,
          200,
        )
      ).ids,
      [1],
    )

    // A lower id committed after a higher one, by a transaction that had no xid yet when the poll
    // looked (its nextval() default taken, the INSERT held in a BEFORE trigger): the xmin test alone
    // delivered row 3 and moved the bookmark past row 2 for good. The poll waits for the table's writers.
    await ext.sql('create table racing (id serial primary key, label text not null)')
    await ext.sql(
      "create function racing_hold() returns trigger language plpgsql as $$ begin if new.label = 'slow' then perform pg_sleep(3); end if; return new; end $$",
    )
    await ext.sql('create trigger racing_hold before insert on racing for each row execute function racing_hold()')
    const racing = await asA('POST', '/api/v1/database-triggers', {
      ...base,
      name: 'racing',
      table_name: 'racing',
      batch_size: 100,
    })
    t.equal(racing.status, 201, racing.text)
    const racingId = (racing.body as { id: string }).id
    await eventually(
      async () => {
        const r = (await asA('GET', '/api/v1/database-triggers/racing')).body as { last_polled_at: string | null }
        return r.last_polled_at !== null ? true : undefined
      },
      'the racing trigger activated (an empty table)',
      30_000,
      100,
    )
    const slow = new pg.Client({ connectionString: ext.url })
    await slow.connect()
    t.teardown(() => slow.end())
    // A nextval() that writes WAL (the first after a checkpoint, then every 32nd) gives its
    // transaction an xid; the one before it did, so the held insert's own does not.
    await ext.sql("select nextval('racing_id_seq')")
    const slowInsert = slow.query("insert into racing (label) values ('slow') returning id")
    await sleep(300)
    await ext.sql("insert into racing (label) values ('fast')")
    t.same((await slowInsert).rows, [{ id: 2 }], 'the held insert took id 2 before the fast one took 3')
    const raced = await eventually(
      async () => {
        const d = await delivered(racingId)
        return d.ids.length >= 2 ? d : undefined
      },
      'rows 2 and 3 of the racing table',
      30_000,
      200,
    )
    t.same(
      [...raced.ids].sort((x, y) => x - y),
      [2, 3],
      'the row committed late with the lower id is delivered too, once',
    )

    // delete stops the actor
    t.equal((await asA('DELETE', '/api/v1/database-triggers/items')).status, 204)
    t.equal((await asA('GET', '/api/v1/database-triggers/items')).status, 404)
    await eventually(async () => {
      const e = await states.get(`db-trigger.${itemsId}`)
      const s = e?.json<{ state: { active: boolean }; timers: Record<string, number> }>()
      return s !== undefined && !s.state.active && Object.keys(s.timers).length === 0 ? true : undefined
    }, 'the deleted trigger to stop')
  },
)
