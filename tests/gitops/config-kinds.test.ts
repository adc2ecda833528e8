import { jetstream } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import t from 'tap'
import { lateTeller } from '../../actors/runtime/tell.ts'
import { can, loadPrincipal, type Principal } from '../../src/auth/principal.ts'
import { featureConfigKinds, featurePermissions } from '../../src/feature/collect.ts'
import type { AfterCommit, ConfigKind } from '../../src/feature/config-kinds.ts'
import type { ServiceContext } from '../../src/feature/define.ts'
import { FEATURES } from '../../src/features.ts'
import { AppError } from '../../src/kernel/errors.ts'
import { createLogger } from '../../src/kernel/log.ts'
import type { Db } from '../../src/platform/db.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { openWebhookBucket, readWebhookEntry } from '../../src/webhooks/store.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'
import { externalPostgres } from '../helpers/external-pg.ts'

/*
 * The config kinds of the areas with tables of their own (webhooks, schedules, database triggers,
 * roles, users, dependencies), called directly as the apply engine calls them, on a real platform:
 * a write shows in `list` with its manager and a checksum equal to `checksum(body)` (again after
 * writing the same body), a change reaches what follows the table once the AfterCommit work ran
 * (the WEBHOOKS bucket, a schedule's and a trigger's actor, the principal cache), a rolled-back
 * transaction leaves nothing, `remove` deletes, and an edit through the API detaches the item.
 */
t.setTimeout(300_000)

interface Setup {
  env: TestPlatform
  db: Db
  admin: Principal
  kinds: Map<string, ConfigKind>
  ctx: ServiceContext
}

async function setup(t: Parameters<typeof startTestPlatform>[0]): Promise<Setup> {
  // no workers: nothing here runs a function
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources,actors' })
  const { platform, config } = env
  const db = platform.db as Db
  const nc = platform.nc
  const resources = platform.resources
  const jobs = platform.jobs
  if (resources === undefined || jobs === undefined) throw new Error('the resource-service role runs')
  // the service context the resource-service role gives every feature (src/roles/service.ts)
  const ctx: ServiceContext = {
    nc,
    js: jetstream(nc),
    names: natsNames(config.NATS_PREFIX),
    config,
    log: createLogger({ level: 'silent' }),
    db,
    resources,
    jobs,
    actorsHere: lateTeller(),
    permissions: featurePermissions(FEATURES),
    componentProxies: {},
    recordDecorators: [],
    storeKeyProbe: () => undefined,
    configKinds: () => [],
    healthChecks: [],
  }
  const kinds = new Map(featureConfigKinds(FEATURES, ctx).map((k) => [k.kind, k]))
  const admin = await loadPrincipal(db, { sub: env.adminId, via: 'jwt' })
  const fn = await env.request('POST', '/api/v1/functions', {
    body: { name: 'echo', code: 'def handler(input, context):\n    return input\n' },
  })
  if (fn.status !== 201) throw new Error(`function: ${fn.text}`)
  return { env, db, admin, kinds, ctx }
}

const kindOf = (s: Setup, kind: string): ConfigKind => {
  const k = s.kinds.get(kind)
  if (k === undefined) throw new Error(`no config kind ${kind}`)
  return k
}

/** One write in its own transaction, then its AfterCommit work (as the apply engine does). */
async function write(s: Setup, kind: ConfigKind, body: Record<string, unknown>, managedBy = 'config'): Promise<void> {
  const after = await s.db.transaction((tx) => kind.write(tx, s.admin, body, { managedBy }))
  for (const a of after) await a()
}

async function remove(s: Setup, kind: ConfigKind, key: string): Promise<void> {
  const after = await s.db.transaction((tx) => kind.remove(tx, s.admin, key))
  for (const a of after) await a()
}

/** A write whose transaction then fails: answers the AfterCommit work it collected (never run). */
async function rolledBack(s: Setup, kind: ConfigKind, body: Record<string, unknown>): Promise<AfterCommit[]> {
  let collected: AfterCommit[] = []
  await s.db
    .transaction(async (tx) => {
      collected = await kind.write(tx, s.admin, body, { managedBy: 'config' })
      throw new Error('a later write of the apply failed')
    })
    .catch((err: unknown) => {
      if (!(err instanceof Error) || err.message !== 'a later write of the apply failed') throw err
    })
  return collected
}

const itemOf = async (s: Setup, kind: ConfigKind, key: string) => (await kind.list(s.db)).find((c) => c.key === key)

/** The actor's state in ACTOR_STATE (`<type>.<id>`), or null. */
async function actorState<S>(s: Setup, type: string, id: string): Promise<S | null> {
  const kv = await new Kvm(s.env.platform.nc).open(s.ctx.names.bucket('ACTOR_STATE'))
  const e = await kv.get(`${type}.${id}`)
  return e === null || e.operation !== 'PUT' || e.length === 0 ? null : e.json<{ state: S }>().state
}

t.test('config kinds: webhooks, schedules, database triggers, roles, users, dependencies', async (t) => {
  const s = await setup(t)
  const { env } = s

  t.test('each area contributes its kind under its section', async (t) => {
    const sections = Object.fromEntries([...s.kinds.values()].map((k) => [k.kind, [k.section, k.packageable]]))
    t.same(sections, {
      webhook: ['webhooks', true],
      schedule: ['schedules', true],
      database_trigger: ['databaseTriggers', true],
      role: ['roles', false],
      user: ['users', false],
      dependency: ['dependencies', true],
    })
  })

  t.test('webhooks', async (t) => {
    const kind = kindOf(s, 'webhook')
    const kv = await openWebhookBucket(env.platform.nc, s.ctx.names)
    const body = { path: 'cfg/hook', function_name: 'echo', requires_auth: false }
    t.same(kind.refs(body), [{ kind: 'function', key: 'default/echo' }])
    t.same(await kind.validate(s.admin, { path: '../up', function_name: 'echo' }).then((i) => i.length > 0), true)
    await write(s, kind, body)
    let item = await itemOf(s, kind, 'cfg/hook')
    t.equal(item?.managedBy, 'config', 'managed by config')
    t.equal(item?.checksum, kind.checksum(body), 'its checksum is the body’s')
    t.equal((await readWebhookEntry(kv, 'cfg/hook'))?.http_method, 'POST', 'published after the commit')
    await write(s, kind, body)
    t.equal((await itemOf(s, kind, 'cfg/hook'))?.checksum, kind.checksum(body), 'the same body: the same checksum')

    // a change: the gateways' copy follows, and a call with the old method answers 405
    const changed = { ...body, http_method: 'GET' }
    t.not(kind.checksum(changed), kind.checksum(body))
    await write(s, kind, changed)
    t.equal((await itemOf(s, kind, 'cfg/hook'))?.checksum, kind.checksum(changed))
    t.equal((await readWebhookEntry(kv, 'cfg/hook'))?.http_method, 'GET')
    const call = await eventually(async () => {
      const r = await env.request('POST', '/webhooks/cfg/hook', { token: null, body: {} })
      return r.status === 405 ? r : undefined
    }, 'the webhook answering GET only')
    t.equal(call.headers.get('allow'), 'GET')

    // the signing secret: a secret field, never listed, part of the checksum
    const signed = { ...changed, signing_secret: 'a-signing-secret-of-32-characters' }
    await write(s, kind, signed)
    item = await itemOf(s, kind, 'cfg/hook')
    t.notOk(item !== undefined && 'signing_secret' in item.body, 'the secret is never listed')
    t.equal(item?.checksum, kind.checksum(signed))
    t.equal((await readWebhookEntry(kv, 'cfg/hook'))?.signed, true, 'calls must now be signed')

    // rolled back: nothing written, nothing published
    const after = await rolledBack(s, kind, { path: 'cfg/rolled', function_name: 'echo' })
    t.equal(after.length, 1, 'the write had collected its publication')
    t.equal(await itemOf(s, kind, 'cfg/rolled'), undefined, 'no row')
    t.equal(await readWebhookEntry(kv, 'cfg/rolled'), null, 'no entry')

    // detach-on-edit
    const patched = await env.request('PATCH', '/api/v1/webhooks/cfg/hook', { body: { description: 'by hand' } })
    t.equal(patched.status, 200)
    t.equal((await itemOf(s, kind, 'cfg/hook'))?.managedBy, null, 'an API edit detaches it')

    await remove(s, kind, 'cfg/hook')
    t.equal(await itemOf(s, kind, 'cfg/hook'), undefined, 'removed')
    t.equal(await readWebhookEntry(kv, 'cfg/hook'), null, 'unpublished')
    t.equal((await env.request('GET', '/api/v1/webhooks/cfg/hook')).status, 404)
  })

  t.test('schedules', async (t) => {
    const kind = kindOf(s, 'schedule')
    const body = { name: 'nightly', schedule_type: 'function', target_name: 'echo', cron_expression: '0 3 1 1 *' }
    t.same(kind.refs(body), [{ kind: 'function', key: 'default/echo' }])
    // the API's checks: a cron croner can use; the minimum interval for who may not change everyone's
    t.ok((await kind.validate(s.admin, { ...body, cron_expression: 'not a cron at all' })).length > 0, 'bad cron')
    const user = await env.createUser('plain@test.local')
    const plain = await loadPrincipal(s.db, { sub: user.id, via: 'jwt' })
    t.ok((await kind.validate(plain, { ...body, cron_expression: '* * * * * *' })).length > 0, 'under the minimum')
    t.same(await kind.validate(s.admin, { ...body, cron_expression: '* * * * * *' }), [], 'admins are trusted')

    await write(s, kind, body)
    t.match(await itemOf(s, kind, 'nightly'), { managedBy: 'config', checksum: kind.checksum(body) })
    await write(s, kind, body)
    t.equal((await itemOf(s, kind, 'nightly'))?.checksum, kind.checksum(body), 'the same body: the same checksum')
    const got = await env.request('GET', '/api/v1/schedules/nightly')
    const id = (got.body as { id: string }).id
    type State = { cron: string | null; active: boolean; next: number | null }
    await eventually(
      async () => ((await actorState<State>(s, 'schedule', id))?.cron === '0 3 1 1 *' ? true : undefined),
      'the actor told the cron',
    )

    // a change: the actor runs on the new cron (a far one: it never fires during the test)
    const changed = { ...body, cron_expression: '0 4 2 1 *' }
    await write(s, kind, changed)
    t.equal((await itemOf(s, kind, 'nightly'))?.checksum, kind.checksum(changed))
    const state = await eventually(async () => {
      const st = await actorState<State>(s, 'schedule', id)
      return st?.cron === '0 4 2 1 *' ? st : undefined
    }, 'the actor told the new cron')
    t.equal(new Date(state.next ?? 0).getUTCHours(), 4, 'its next tick is the new cron’s')

    const after = await rolledBack(s, kind, { ...body, name: 'rolled' })
    t.equal(after.length, 1)
    t.equal(await itemOf(s, kind, 'rolled'), undefined, 'rolled back: no row')
    t.equal((await env.request('GET', '/api/v1/schedules/rolled')).status, 404)

    const patched = await env.request('PATCH', '/api/v1/schedules/nightly', { body: { description: 'by hand' } })
    t.equal(patched.status, 200, patched.text)
    t.equal((await itemOf(s, kind, 'nightly'))?.managedBy, null, 'an API edit detaches it')

    await remove(s, kind, 'nightly')
    t.equal(await itemOf(s, kind, 'nightly'), undefined, 'removed')
    await eventually(
      async () => ((await actorState<State>(s, 'schedule', id))?.active === false ? true : undefined),
      'the actor told the schedule is gone',
    )
  })

  t.test('database triggers: the connection by name', async (t) => {
    const kind = kindOf(s, 'database_trigger')
    const ext = await externalPostgres(t, 'cfgtrig')
    await ext.sql('create table items (id bigserial primary key, at timestamptz not null default now())')
    const conn = await env.request('POST', '/api/v1/database-connections', { body: { name: 'items-db', ...ext.spec } })
    t.equal(conn.status, 201, conn.text)
    const body = {
      name: 'items',
      database_connection: 'items-db',
      table_name: 'items',
      poll_column: 'id',
      function_name: 'echo',
    }
    t.same(kind.refs(body), [
      { kind: 'function', key: 'default/echo' },
      { kind: 'database_connection', key: 'items-db' },
    ])
    t.same(await kind.validate(s.admin, body), [])
    t.ok(
      (await kind.validate(s.admin, { ...body, database_connection_id: (conn.body as { id: string }).id })).length > 0,
      'a config body names the connection, not its id',
    )
    await write(s, kind, body)
    const item = await itemOf(s, kind, 'items')
    t.match(item, { managedBy: 'config', checksum: kind.checksum(body) })
    t.equal(item?.body['database_connection'], 'items-db', 'listed (exported) with the connection’s name')
    t.notOk(item !== undefined && 'database_connection_id' in item.body, 'never its id')
    t.same(item?.body['operations'], ['INSERT'], 'a sequence poll column: INSERT only (the table inspected)')
    const api = await env.request('GET', '/api/v1/database-triggers/items')
    t.equal((api.body as { database_connection_id: string }).database_connection_id, (conn.body as { id: string }).id)

    // the exported body written back (as onto another installation) is the same trigger
    const exported = item?.body ?? {}
    await write(s, kind, exported)
    t.equal((await itemOf(s, kind, 'items'))?.checksum, kind.checksum(exported), 'the exported body round-trips')
    await write(s, kind, body)
    t.equal((await itemOf(s, kind, 'items'))?.checksum, kind.checksum(body))

    const id = (api.body as { id: string }).id
    type State = { active: boolean; intervalMs: number }
    await write(s, kind, { ...body, poll_interval_seconds: 600 })
    await eventually(
      async () => ((await actorState<State>(s, 'db-trigger', id))?.intervalMs === 600_000 ? true : undefined),
      'the actor told the new interval',
    )

    const missing = await s.db
      .transaction((tx) =>
        kind.write(tx, s.admin, { ...body, database_connection: 'nowhere' }, { managedBy: 'config' }),
      )
      .then(
        () => 'written',
        (err: unknown) => (err instanceof AppError ? err.code : String(err)),
      )
    t.equal(missing, 'database.connection_not_found', 'an unknown connection name is refused')

    t.equal((await rolledBack(s, kind, { ...body, name: 'rolled' })).length, 1)
    t.equal(await itemOf(s, kind, 'rolled'), undefined, 'rolled back: no row')

    const patched = await env.request('PATCH', '/api/v1/database-triggers/items', { body: { description: 'by hand' } })
    t.equal(patched.status, 200, patched.text)
    t.equal((await itemOf(s, kind, 'items'))?.managedBy, null, 'an API edit detaches it')

    await remove(s, kind, 'items')
    t.equal(await itemOf(s, kind, 'items'), undefined, 'removed')
    await eventually(
      async () => ((await actorState<State>(s, 'db-trigger', id))?.active === false ? true : undefined),
      'the actor told the trigger is gone',
    )
  })

  t.test('roles and users: the principal cache follows', async (t) => {
    const roles = kindOf(s, 'role')
    const users = kindOf(s, 'user')
    const role = {
      name: 'Readers',
      description: 'read functions',
      permissions: { 'platform.functions.read:all': true },
    }
    t.ok((await roles.validate(s.admin, { ...role, permissions: { 'not a permission': true } })).length > 0)
    await write(s, roles, role)
    t.match(await itemOf(s, roles, 'Readers'), { managedBy: 'config', checksum: roles.checksum(role) })
    await write(s, roles, role)
    t.equal((await itemOf(s, roles, 'Readers'))?.checksum, roles.checksum(role))

    const user = { email: 'Reader@Test.local', roles: ['Readers'] }
    t.same(users.refs(user), [{ kind: 'role', key: 'Readers' }])
    t.equal(users.keyOf(user), 'reader@test.local')
    await write(s, users, user)
    const item = await itemOf(s, users, 'reader@test.local')
    t.match(item, { managedBy: 'config', checksum: users.checksum(user) })
    t.same(item?.body, { email: 'reader@test.local', is_active: true, roles: ['Readers'] }, 'no password, ever')
    const [row] = await env.sql<{ id: string }>('select id from users where email = $1', ['reader@test.local'])
    const id = (row as { id: string }).id
    t.ok(can(await loadPrincipal(s.db, { sub: id, via: 'jwt' }), 'platform.functions.read:all'))

    // a changed role reaches its members' cached principals after the commit
    await write(s, roles, { ...role, permissions: { 'platform.schedules.read:own': true } })
    const p = await loadPrincipal(s.db, { sub: id, via: 'jwt' })
    t.notOk(can(p, 'platform.functions.read:all'), 'the old grant is gone from the cache')
    t.ok(can(p, 'platform.schedules.read:own'))

    // a deactivated user cannot be loaded any more
    await write(s, users, { ...user, is_active: false })
    await t.rejects(loadPrincipal(s.db, { sub: id, via: 'jwt' }), 'deactivated: its cached principal dropped')

    t.equal((await rolledBack(s, users, { email: 'rolled@test.local' })).length, 1)
    t.equal(await itemOf(s, users, 'rolled@test.local'), undefined, 'rolled back: no user')
    t.equal((await rolledBack(s, roles, { name: 'Rolled' })).length, 0, 'a role without members: nothing to announce')
    t.equal(await itemOf(s, roles, 'Rolled'), undefined, 'rolled back: no role')

    const patched = await env.request('PATCH', `/api/v1/users/${id}`, { body: { is_active: true } })
    t.equal(patched.status, 200, patched.text)
    t.equal((await itemOf(s, users, 'reader@test.local'))?.managedBy, null, 'an API edit detaches the user')
    const rolePatch = await env.request('PATCH', '/api/v1/roles/Readers', { body: { description: 'by hand' } })
    t.equal(rolePatch.status, 200, rolePatch.text)
    t.equal((await itemOf(s, roles, 'Readers'))?.managedBy, null, 'an API edit detaches the role')

    await remove(s, users, 'reader@test.local')
    t.equal(await itemOf(s, users, 'reader@test.local'), undefined, 'user removed')
    await remove(s, roles, 'Readers')
    t.equal(await itemOf(s, roles, 'Readers'), undefined, 'role removed')
  })

  t.test('dependencies', async (t) => {
    const kind = kindOf(s, 'dependency')
    const body = { package_name: 'Requests_OAuthlib', version: '1.3.1' }
    t.equal(kind.keyOf(body), 'requests-oauthlib')
    t.ok((await kind.validate(s.admin, { package_name: 'bad name!' })).length > 0)
    await write(s, kind, body, 'pkg:tools')
    t.match(await itemOf(s, kind, 'requests-oauthlib'), {
      managedBy: 'pkg:tools',
      checksum: kind.checksum(body),
      body: { package_name: 'requests-oauthlib', version: '==1.3.1' },
    })
    const [row] = await env.sql<{ status: string }>('select status from dependencies where package_name = $1', [
      'requests-oauthlib',
    ])
    t.equal(row?.status, 'approved', 'approved at once: config is an administrator’s')
    await write(s, kind, body, 'pkg:tools')
    t.equal((await itemOf(s, kind, 'requests-oauthlib'))?.checksum, kind.checksum(body))
    t.same(await rolledBack(s, kind, { package_name: 'rolled' }), [])
    t.equal(await itemOf(s, kind, 'rolled'), undefined, 'rolled back: no request')
    const list = await env.request('GET', '/api/v1/dependencies')
    const dep = (list.body as { id: string; package_name: string }[]).find(
      (d) => d.package_name === 'requests-oauthlib',
    )
    t.equal((await env.request('POST', `/api/v1/dependencies/${String(dep?.id)}/reject`)).status, 200)
    t.equal((await itemOf(s, kind, 'requests-oauthlib'))?.managedBy, null, 'rejecting it by hand detaches it')
    await remove(s, kind, 'requests-oauthlib')
    t.equal(await itemOf(s, kind, 'requests-oauthlib'), undefined, 'removed')
  })
})
