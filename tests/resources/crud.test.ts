import t from 'tap'
import { KINDS } from '../../src/features.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { KIND_FIXTURES } from '../fixtures/kinds.ts'

/*
 * CRUD of every registered kind through HTTP, driven by KINDS + fixtures: create, read, list with
 * namespace filter and pagination, update, versions, delete, and bad input (wrong types, unknown
 * fields, bad names, duplicates) with the right status and the one error body.
 */
const env = await startTestPlatform(t)

const isErrorBody = (b: unknown, code?: string): boolean => {
  const e = b as { detail?: unknown; code?: unknown }
  return typeof e?.detail === 'string' && typeof e.code === 'string' && (code === undefined || e.code === code)
}

for (const kind of KINDS) {
  const fx = KIND_FIXTURES[kind.kind]
  t.test(`${kind.kind}: fixture exists`, async (t) => {
    t.ok(fx, `tests/fixtures/kinds.ts has an entry for ${kind.kind}`)
  })
  if (fx === undefined) continue
  const base = `/api/v1/${kind.plural}`
  const namespaced = kind.addressing === 'namespaced'
  const addr = (ns: string, name: string) => (namespaced ? { namespace: ns, name } : { name })
  const onePath = (rec: { namespace?: unknown; name: unknown }) =>
    namespaced ? `${base}/${String(rec.namespace)}/${String(rec.name)}` : `${base}/${String(rec.name)}`
  const changePath = (rec: { id: unknown; namespace?: unknown; name: unknown }) =>
    namespaced ? onePath(rec) : `${base}/${String(rec.id)}`

  t.test(`${kind.kind}: create, get, list, update, delete`, async (t) => {
    const created = await env.request('POST', base, { body: { ...addr('crud', 'first'), ...fx.valid } })
    t.equal(created.status, 201, created.text)
    const rec = created.body as Record<string, unknown>
    t.match(rec, { id: String, name: 'first', version: 1, managed_by: null, is_active: true, owner_id: env.adminId })
    if (namespaced) t.equal(rec['namespace'], 'crud')
    for (const [k, v] of Object.entries(fx.valid)) {
      if (kind.secrets.includes(k)) {
        t.notOk(k in rec, `${k} is never returned`)
        t.equal(rec[`has_${k}`], true)
      } else t.same(rec[k], v, `${k} stored as sent`)
    }
    const got = await env.request('GET', onePath(rec as { name: unknown }))
    t.equal(got.status, 200)
    t.same(got.body, rec)

    const second = await env.request('POST', base, {
      body: { ...addr('other', 'second'), ...fx.valid, ...(namespaced ? {} : { name: 'second' }) },
    })
    t.equal(second.status, 201, second.text)
    const all = await env.request('GET', base)
    t.equal(all.status, 200)
    t.ok(Number(all.headers.get('x-total-count')) >= 2)
    if (namespaced) {
      const filtered = await env.request('GET', `${base}?namespace=crud`)
      t.same(
        (filtered.body as { name: string }[]).map((r) => r.name),
        ['first'],
      )
      const paged = await env.request('GET', `${base}?namespace=crud,other&limit=1&offset=1`)
      t.equal((paged.body as unknown[]).length, 1)
      t.equal(paged.headers.get('x-total-count'), '2')
      t.equal((paged.body as { name: string }[])[0]?.name, 'second')
    }

    const updated = await env.request(kind.updateMethod, changePath(rec as { id: unknown; name: unknown }), {
      body: fx.update,
    })
    t.equal(updated.status, 200, updated.text)
    for (const [k, v] of Object.entries(fx.update)) t.same((updated.body as Record<string, unknown>)[k], v)
    const changedVersioned = Object.keys(fx.update).some((k) => kind.versioned.includes(k))
    t.equal((updated.body as { version: number }).version, changedVersioned ? 2 : 1)
    if (kind.versioned.length > 0) {
      const versions = await env.request('GET', `${onePath(rec as { name: unknown })}/versions`)
      t.equal(versions.status, 200)
      t.same(
        (versions.body as { version: number }[]).map((v) => v.version),
        changedVersioned ? [2, 1] : [1],
      )
    }

    const deleted = await env.request('DELETE', changePath(rec as { id: unknown; name: unknown }))
    t.equal(deleted.status, 204)
    const gone = await env.request('GET', onePath(rec as { name: unknown }))
    t.equal(gone.status, 404)
    t.ok(isErrorBody(gone.body, 'resource.not_found'), gone.text)
    const again = await env.request('DELETE', changePath(rec as { id: unknown; name: unknown }))
    t.equal(again.status, 404)
  })

  t.test(`${kind.kind}: bad input`, async (t) => {
    const dup = { ...addr('bad', 'dup'), ...fx.valid }
    t.equal((await env.request('POST', base, { body: dup })).status, 201)
    const conflict = await env.request('POST', base, { body: dup })
    t.equal(conflict.status, 409)
    t.ok(isErrorBody(conflict.body, 'resource.exists'), conflict.text)

    const wrong = await env.request('POST', base, {
      body: { ...addr('bad', 'wrongtype'), ...fx.valid, ...fx.wrongType },
    })
    t.equal(wrong.status, 422)
    t.ok(isErrorBody(wrong.body, 'request.invalid'))
    t.ok(
      (wrong.body as { errors: { path: string }[] }).errors.some((e) =>
        Object.keys(fx.wrongType).some((k) => e.path.startsWith(k)),
      ),
      wrong.text,
    )

    const unknown = await env.request('POST', base, { body: { ...addr('bad', 'unknown'), ...fx.valid, surprise: 1 } })
    t.equal(unknown.status, 422, 'unknown fields are refused')

    for (const name of ['Upper', 'has space', 'dot.ted', '-lead', 'x'.repeat(64), '']) {
      const r = await env.request('POST', base, { body: { ...addr('bad', name), ...fx.valid } })
      t.equal(r.status, 422, `name ${JSON.stringify(name)} refused`)
    }
    if (namespaced) {
      const badNs = await env.request('POST', base, { body: { ...addr('Bad NS', 'ok'), ...fx.valid } })
      t.equal(badNs.status, 422)
      const badPath = await env.request('GET', `${base}/Bad%20NS/x`)
      t.equal(badPath.status, 422)
    }
    const missing = await env.request('POST', base, { body: fx.valid })
    t.equal(missing.status, 422, 'name is required')
    const badUpdate = await env.request(
      kind.updateMethod,
      namespaced ? `${base}/bad/dup` : `${base}/00000000-0000-4000-8000-000000000000`,
      { body: fx.wrongType },
    )
    t.equal(badUpdate.status, 422)
    const badQuery = await env.request('GET', `${base}?limit=0`)
    t.equal(badQuery.status, 422)
  })
}

t.test('the default agent exists after start', async (t) => {
  const r = await env.request('GET', '/api/v1/agents/default/default')
  t.equal(r.status, 200)
  t.match(r.body, { namespace: 'default', name: 'default', temperature: 0.7, system_prompt: String })
})
