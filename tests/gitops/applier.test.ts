import t from 'tap'
import { loadPrincipal } from '../../src/auth/principal.ts'
import type { ServiceContext } from '../../src/feature/define.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { sql, transaction, type Db } from '../../src/platform/db.ts'
import { skillKind } from '../../src/kinds/skill/kind.ts'
import type { ResourceService } from '../../src/resources/service.ts'
import { createApplier, type ApplyRequest } from '../../src/gitops/apply.ts'
import type { DocumentResource } from '../../src/gitops/document-resources.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The apply engine as packages use it (src/gitops/apply.ts): `prune`, the caller's own writes in
 * the same transaction (`inTx`), and the resource engine writing inside an outer transaction with
 * its cache announcements held until the commit (`ResourceService.within`).
 */
const env = await startTestPlatform(t)
const db = env.platform.db as Db
const resources = env.platform.resources as ResourceService
const ctx = { db, resources, log: createLogger({ level: 'silent' }) } as unknown as ServiceContext
const applier = createApplier(ctx, [])
const admin = await loadPrincipal(db, { sub: env.adminId, via: 'jwt' })

const skill = (ns: string, name: string, content: string, index = 0): DocumentResource => ({
  section: 'skills',
  index,
  kind: 'skill',
  key: `${ns}/${name}`,
  path: `spec.skills[${String(index)}]`,
  body: { namespace: ns, name, content },
})
const req = (resources: DocumentResource[], extra: Partial<ApplyRequest> = {}): ApplyRequest => ({
  resources,
  managedBy: 'pkg:demo',
  dryRun: false,
  force: false,
  prune: false,
  ...extra,
})

t.test('prune deletes what the owner no longer declares, and only that', async (t) => {
  await env.request('POST', '/api/v1/skills', { body: { namespace: 'pr', name: 'hand', content: 'by hand' } })
  const first = await applier.apply(admin, req([skill('pr', 'a', 'x'), skill('pr', 'b', 'y', 1)]))
  t.match(first, { success: true, summary: { created: 2 } })
  const second = await applier.apply(admin, req([skill('pr', 'a', 'x')], { prune: true }))
  t.match(second, {
    success: true,
    summary: { unchanged: 1, deleted: 1 },
    changes: [{ action: 'unchanged' }, { action: 'deleted', resourceType: 'skill', resourceName: 'pr/b' }],
  })
  const left = await env.sql<{ name: string }>(
    `select name from resources where kind = 'skill' and namespace = 'pr' order by name`,
  )
  t.same(
    left.map((r) => r.name),
    ['a', 'hand'],
    'the hand-made one stays',
  )
  const sections = await applier.current({ managedBy: 'pkg:demo' })
  t.same(sections['skills'], [{ namespace: 'pr', name: 'a', content: 'x' }], 'current() by owner')
})

t.test("the caller's own writes share the transaction: one failing rolls everything back", async (t) => {
  const out = applier.apply(admin, req([skill('tx', 'one', 'x')]), async (tx) => {
    await tx.query(sql.unsafe`select 1`)
    throw new Error('the package record could not be written')
  })
  await t.rejects(out, /package record/)
  t.equal((await env.sql(`select 1 from resources where namespace = 'tx'`)).length, 0, 'nothing applied')
})

t.test('inside an outer transaction the engine announces only after the commit', async (t) => {
  await resources.all(skillKind) // the kind loaded in this process's row cache
  let after: (() => Promise<void>)[] = []
  await transaction(db, async (tx) => {
    const w = resources.within(tx)
    await w.create(admin, skillKind, { namespace: 'held', name: 's', content: 'x' }, { managedBy: 'config' })
    after = w.takeAfterCommit()
    t.equal(
      (await resources.all(skillKind)).filter((s) => s.namespace === 'held').length,
      0,
      'the cache has not heard of it before the commit',
    )
  })
  t.ok(after.length >= 2, 'the announcement and the change listeners wait')
  for (const work of after) await work()
  t.match(await resources.get(admin, skillKind, { namespace: 'held', name: 's' }), {
    content: 'x',
    managed_by: 'config',
  })
  t.equal(
    (await resources.all(skillKind)).filter((s) => s.namespace === 'held').length,
    1,
    'the cache has it once announced',
  )
})

t.test('the document replaces the item: a field left out returns to its default; is_active', async (t) => {
  const withDescription = {
    ...skill('rep', 's', 'x'),
    body: { namespace: 'rep', name: 's', content: 'x', description: 'd' },
  }
  t.match(await applier.apply(admin, req([withDescription])), { success: true, summary: { created: 1 } })
  const without = { ...skill('rep', 's', 'x'), body: { namespace: 'rep', name: 's', content: 'x', is_active: false } }
  t.match(await applier.apply(admin, req([without])), { success: true, summary: { updated: 1 } })
  t.match(await resources.get(admin, skillKind, { namespace: 'rep', name: 's' }), {
    description: '',
    is_active: false,
  })
  t.match(await applier.apply(admin, req([without])), { success: true, summary: { unchanged: 1 } }, 'then a no-op')
  t.same(
    (await applier.current({ managedBy: 'pkg:demo' }))['skills']?.find((s) => s['namespace'] === 'rep'),
    { namespace: 'rep', name: 's', content: 'x', is_active: false },
    'exported as written',
  )
})
