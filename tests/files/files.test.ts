import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Collections and files end to end through the gateway: uploads in the three shapes (JSON,
 * multipart, raw body), versions, downloads, metadata validation, file names, visibility and
 * other users, signed URLs, search, cascade delete down to the object store.
 */
let env: TestPlatform
let a: { id: string; token: string }
let b: { id: string; token: string }

t.before(async () => {
  env = await startTestPlatform(t, { FILES_SWEEP_SECONDS: '0.2' })
  a = await env.createUser('files-a@test.local')
  b = await env.createUser('files-b@test.local')
})

const sha = (buf: Buffer | string) => createHash('sha256').update(buf).digest('hex')

async function collection(name: string, extra: Record<string, unknown> = {}, token = a.token): Promise<void> {
  const res = await env.request('POST', '/api/v1/collections', { token, body: { namespace: 'docs-a', name, ...extra } })
  if (res.status !== 201) throw new Error(`collection: ${res.text}`)
}

async function upload(path: string, form: FormData, token = a.token) {
  const res = await fetch(`${env.base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  })
  const text = await res.text()
  return { status: res.status, text, body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) }
}

async function download(path: string, token: string | null = a.token) {
  const res = await fetch(`${env.base}${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } })
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) }
}

t.test('JSON, multipart and raw uploads; every upload is a version; old versions download', async (t) => {
  await collection('manuals', {
    metadata_schema: { type: 'object', properties: { lang: { type: 'string' } }, additionalProperties: false },
  })
  const json = await env.request('POST', '/files/docs-a/manuals', {
    token: a.token,
    body: {
      name: 'readme.txt',
      content_base64: Buffer.from('first line\nsecond line\n').toString('base64'),
      content_type: 'text/plain',
      file_metadata: { lang: 'en' },
    },
  })
  t.equal(json.status, 201, json.text)
  t.match(json.body, {
    name: 'readme.txt',
    current_version: 1,
    visibility: 'private',
    file_metadata: { lang: 'en' },
    versions: [{ version: 1, size_bytes: 23, hash_sha256: sha('first line\nsecond line\n') }],
  })

  const form = new FormData()
  form.append('file_metadata', JSON.stringify({ lang: 'de' }))
  form.append('file', new Blob(['zweite Fassung\n'], { type: 'text/plain' }), 'readme.txt')
  const multi = await upload('/files/docs-a/manuals', form)
  t.equal(multi.status, 201, multi.text)
  t.match(multi.body, { current_version: 2, file_metadata: { lang: 'de' }, content_type: 'text/plain' })
  t.equal((multi.body?.['versions'] as unknown[] | undefined)?.length, 2)

  const raw = await fetch(`${env.base}/files/docs-a/manuals?name=data.bin`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/octet-stream' },
    body: Buffer.from([0, 1, 2, 255]),
  })
  t.equal(raw.status, 201, await raw.clone().text())

  const current = await download('/files/docs-a/manuals/readme.txt')
  t.equal(current.status, 200)
  t.equal(current.bytes.toString(), 'zweite Fassung\n')
  t.equal(current.headers.get('x-file-version'), '2')
  t.match(current.headers.get('content-disposition'), /filename="readme.txt"/)
  const first = await download('/files/docs-a/manuals/readme.txt?version=1')
  t.equal(first.bytes.toString(), 'first line\nsecond line\n')
  t.equal((await download('/files/docs-a/manuals/readme.txt?version=9')).status, 404)
  t.same([...(await download('/files/docs-a/manuals/data.bin')).bytes], [0, 1, 2, 255])

  const list = await env.request('GET', '/files/docs-a/manuals', { token: a.token })
  t.same(
    (list.body as { name: string }[]).map((f) => f.name),
    ['data.bin', 'readme.txt'],
  )
  const noOverwrite = await env.request('POST', '/files/docs-a/manuals', {
    token: a.token,
    body: { name: 'readme.txt', content_base64: 'eA==', update_existing: false },
  })
  t.equal(noOverwrite.status, 409)
  t.equal((noOverwrite.body as { code: string }).code, 'file.exists')
})

t.test('metadata failing the schema and path-traversal names are refused (422), nothing stored', async (t) => {
  await collection('strict', {
    metadata_schema: { type: 'object', required: ['lang'], properties: { lang: { enum: ['en', 'de'] } } },
  })
  const bad = await env.request('POST', '/files/docs-a/strict', {
    token: a.token,
    body: { name: 'x.txt', content_base64: 'eA==', file_metadata: { lang: 'fr' } },
  })
  t.equal(bad.status, 422)
  t.equal((bad.body as { code: string }).code, 'file.invalid_metadata')
  const form = new FormData()
  form.append('file_metadata', '{}')
  form.append('file', new Blob(['x']), 'x.txt')
  const missing = await upload('/files/docs-a/strict', form)
  t.equal(missing.status, 422)
  t.match(missing.body, { code: 'file.invalid_metadata' })

  for (const name of ['../../etc/passwd', '..', 'a/b.txt', 'a\\b.txt']) {
    const f = new FormData()
    f.append('file_metadata', JSON.stringify({ lang: 'en' }))
    f.append('file', new Blob(['x']), name)
    const res = await upload('/files/docs-a/strict', f)
    t.equal(res.status, 422, `multipart ${name}: ${res.text}`)
    t.match(res.body, { code: 'file.invalid_name' })
    const j = await env.request('POST', '/files/docs-a/strict', {
      token: a.token,
      body: { name, content_base64: 'eA==', file_metadata: { lang: 'en' } },
    })
    t.equal(j.status, 422, `json ${name}`)
  }
  const traversal = await env.request('GET', '/files/docs-a/strict/..%2F..%2Fetc%2Fpasswd', { token: a.token })
  t.equal(traversal.status, 422)
  const list = await env.request('GET', '/files/docs-a/strict', { token: a.token })
  t.same(list.body, [])
  // the refused uploads left no object behind
  await eventually(
    async () =>
      (await env.sql('select count(*)::int as n from file_blob_garbage where not_before <= now()'))[0]?.['n'] === 0
        ? true
        : undefined,
    'the sweeper',
  )
})

t.test("user B gets 404 on A's collection, files and versions; private vs shared", async (t) => {
  await collection('secret')
  const up = await env.request('POST', '/files/docs-a/secret', {
    token: a.token,
    body: { name: 'plan.txt', content_base64: Buffer.from('top secret').toString('base64') },
  })
  t.equal(up.status, 201)
  for (const [m, path, body] of [
    ['GET', '/files/docs-a/secret', undefined],
    ['GET', '/files/docs-a/secret/plan.txt', undefined],
    ['GET', '/files/docs-a/secret/plan.txt?version=1', undefined],
    ['GET', '/files/docs-a/secret/plan.txt/info', undefined],
    ['PATCH', '/files/docs-a/secret/plan.txt', { file_metadata: {} }],
    ['DELETE', '/files/docs-a/secret/plan.txt', undefined],
    ['POST', '/files/docs-a/secret/plan.txt/url', {}],
    ['POST', '/files/docs-a/secret/search', { query: 'secret' }],
    ['POST', '/files/docs-a/secret', { name: 'mine.txt', content_base64: 'eA==' }],
  ] as const) {
    const res = await env.request(m, path, { token: b.token, ...(body === undefined ? {} : { body }) })
    t.equal(res.status, 404, `${m} ${path} as B: ${res.text}`)
  }
  const form = new FormData()
  form.append('file', new Blob(['x']), 'b.txt')
  t.equal((await upload('/files/docs-a/secret', form, b.token)).status, 404, 'streamed upload as B')

  // B is granted read and download on every collection of the namespace (role): shared files only
  // (download without read, read without download: tests/access/verbs.test.ts)
  t.equal(
    (
      await env.request('POST', '/api/v1/roles', {
        body: {
          name: 'Readers',
          permissions: {
            'platform.collections/docs-a/*.read:all': true,
            'platform.collections/docs-a/*.download:all': true,
          },
        },
      })
    ).status,
    201,
  )
  t.equal((await env.request('POST', `/api/v1/roles/Readers/users/${b.id}`)).status, 200)
  await env.request('POST', '/files/docs-a/secret', {
    token: a.token,
    body: { name: 'memo.txt', content_base64: Buffer.from('for all').toString('base64'), visibility: 'shared' },
  })
  await eventually(
    async () =>
      (await env.request('GET', '/files/docs-a/secret', { token: b.token })).status === 200 ? true : undefined,
    'role change seen',
  )
  const seen = await env.request('GET', '/files/docs-a/secret', { token: b.token })
  t.same(
    (seen.body as { name: string }[]).map((f) => f.name),
    ['memo.txt'],
    'B sees the shared file only',
  )
  t.equal((await download('/files/docs-a/secret/plan.txt', b.token)).status, 404)
  t.equal((await download('/files/docs-a/secret/memo.txt', b.token)).bytes.toString(), 'for all')
  t.equal(
    (await env.request('DELETE', '/files/docs-a/secret/memo.txt', { token: b.token })).status,
    403,
    'read-only B cannot delete',
  )
  // the admin sees private files too
  t.equal((await download('/files/docs-a/secret/plan.txt', env.adminToken)).bytes.toString(), 'top secret')
})

t.test('max_total_size_gb counts every kept version; full answers 413 for JSON and streamed uploads', async (t) => {
  // 2^-17 GiB = exactly 8192 bytes
  await collection('tiny', { max_total_size_gb: 2 ** -17 })
  const kb = (n: number) => Buffer.alloc(n * 1024, 'x').toString('base64')
  t.equal(
    (
      await env.request('POST', '/files/docs-a/tiny', {
        token: a.token,
        body: { name: 'a.bin', content_base64: kb(6) },
      })
    ).status,
    201,
  )
  const over = await env.request('POST', '/files/docs-a/tiny', {
    token: a.token,
    body: { name: 'a.bin', content_base64: kb(4) },
  })
  t.equal(over.status, 413, 'a new version of 4 KiB does not fit in the 2 KiB left')
  t.match(over.body, { code: 'file.too_large' })
  t.equal(
    (
      await env.request('POST', '/files/docs-a/tiny', {
        token: a.token,
        body: { name: 'b.bin', content_base64: kb(2) },
      })
    ).status,
    201,
  )
  const full = await env.request('POST', '/files/docs-a/tiny', {
    token: a.token,
    body: { name: 'c.bin', content_base64: 'eA==' },
  })
  t.equal(full.status, 413)
  t.match(full.body, { code: 'file.collection_full' })
  const streamed = await fetch(`${env.base}/files/docs-a/tiny?name=d.bin`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.token}`, 'content-type': 'text/plain' },
    body: 'x',
  })
  t.equal(streamed.status, 413)
  t.match(await streamed.json(), { code: 'file.collection_full' })
})

t.test('signed URLs: no auth, one version, expiry', async (t) => {
  await collection('links')
  await env.request('POST', '/files/docs-a/links', {
    token: a.token,
    body: { name: 'a.txt', content_base64: Buffer.from('v1').toString('base64') },
  })
  await env.request('POST', '/files/docs-a/links', {
    token: a.token,
    body: { name: 'a.txt', content_base64: Buffer.from('v2').toString('base64') },
  })
  const u1 = await env.request('POST', '/files/docs-a/links/a.txt/url', {
    token: a.token,
    body: { version: 1, expires_in: 60 },
  })
  t.equal(u1.status, 200, u1.text)
  const { url, expires_in } = u1.body as { url: string; expires_in: number }
  t.equal(expires_in, 60)
  t.match(url, /^\/files\/_signed\//)
  const got = await download(url, null)
  t.equal(got.status, 200)
  t.equal(got.bytes.toString(), 'v1', 'the URL names version 1, not the current one')
  const short = await env.request('POST', '/files/docs-a/links/a.txt/url', { token: a.token, body: { expires_in: 1 } })
  const shortUrl = (short.body as { url: string }).url
  // (no check that it works first: a 1-second token may already be past its second)
  await eventually(
    async () => ((await download(shortUrl, null)).status === 404 ? true : undefined),
    'the URL expires',
    5000,
  )
  const long = await env.request('POST', '/files/docs-a/links/a.txt/url', {
    token: a.token,
    body: { expires_in: 10 ** 9 },
  })
  t.equal((long.body as { expires_in: number }).expires_in, 604800, 'clamped to FILES_SIGNED_URL_MAX_SECONDS')
  const forged = `${url.slice(0, -3)}${url.endsWith('AAA') ? 'BBB' : 'AAA'}`
  t.equal((await download(forged, null)).status, 404)
  t.equal((await download(`${url}x`, null)).status, 404)
})

t.test('search: names, metadata filter, text content with line numbers', async (t) => {
  await collection('kb')
  const put = (name: string, text: string, meta: Record<string, unknown>) =>
    env.request('POST', '/files/docs-a/kb', {
      token: a.token,
      body: {
        name,
        content_base64: Buffer.from(text).toString('base64'),
        content_type: 'text/markdown',
        file_metadata: meta,
      },
    })
  await put('boiler.md', '# Boiler\nReset the pressure valve.\nCall support.\n', { kind: 'manual' })
  await put('pump.md', '# Pump\nNo valves here.\n', { kind: 'faq' })
  const res = await env.request('POST', '/files/docs-a/kb/search', { token: a.token, body: { query: 'VALVE' } })
  t.same(res.body, [
    { filename: 'boiler.md', version: 1, matches: [{ line: 2, text: 'Reset the pressure valve.' }] },
    { filename: 'pump.md', version: 1, matches: [{ line: 2, text: 'No valves here.' }] },
  ])
  const filtered = await env.request('POST', '/files/docs-a/kb/search', {
    token: a.token,
    body: { query: 'valve', metadata_filter: { kind: 'faq' } },
  })
  t.same(
    (filtered.body as { filename: string }[]).map((h) => h.filename),
    ['pump.md'],
  )
  const byName = await env.request('POST', '/files/docs-a/kb/search', { token: a.token, body: { query: 'boiler' } })
  t.same(
    (byName.body as { filename: string }[]).map((h) => h.filename),
    ['boiler.md'],
  )
})

t.test('file names are NFC: café.txt typed in NFC and in NFD reaches one file everywhere', async (t) => {
  await collection('unicode')
  const composed = 'caf\u00e9.txt' // é as one code point (NFC)
  const decomposed = 'cafe\u0301.txt' // e + combining acute accent (NFD, as macOS spells it)
  t.not(composed, decomposed, 'two different strings that look the same')
  const path = (name: string) => `/files/docs-a/unicode/${encodeURIComponent(name)}`

  const first = await env.request('POST', '/files/docs-a/unicode', {
    token: a.token,
    body: { name: decomposed, content_base64: Buffer.from('v1 nfd\n').toString('base64'), content_type: 'text/plain' },
  })
  t.equal(first.status, 201, first.text)
  t.match(first.body, { name: composed, current_version: 1 }, 'stored under the NFC spelling')
  const form = new FormData()
  form.append('name', composed)
  form.append('file', new Blob(['v2 nfc\n'], { type: 'text/plain' }), 'upload.txt')
  const second = await upload('/files/docs-a/unicode', form)
  t.match(
    second,
    { status: 201, body: { name: composed, current_version: 2 } },
    'a multipart upload in NFC is a new version of the same file',
  )
  const raw = await fetch(`${env.base}/files/docs-a/unicode?name=${encodeURIComponent(decomposed)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.token}`, 'content-type': 'text/plain' },
    body: 'v3 nfd raw\n',
  })
  t.equal(raw.status, 201, await raw.clone().text())
  t.match(await raw.json(), { name: composed, current_version: 3 }, 'and a raw upload in NFD too')

  const list = await env.request('GET', '/files/docs-a/unicode', { token: a.token })
  t.same(
    (list.body as { name: string }[]).map((f) => f.name),
    [composed],
    'one file, not two look-alikes',
  )
  const byPrefix = await env.request('GET', `/files/docs-a/unicode?prefix=${encodeURIComponent('cafe\u0301')}`, {
    token: a.token,
  })
  t.same(
    (byPrefix.body as { name: string }[]).map((f) => f.name),
    [composed],
    'a prefix in NFD lists it',
  )
  for (const name of [composed, decomposed]) {
    const got = await download(path(name))
    t.equal(got.status, 200, `download as ${JSON.stringify(name)}`)
    t.equal(got.bytes.toString(), 'v3 nfd raw\n')
    t.match(await env.request('GET', `${path(name)}/info`, { token: a.token }), {
      status: 200,
      body: { name: composed, current_version: 3 },
    })
    const signed = await env.request('POST', `${path(name)}/url`, {
      token: a.token,
      body: { version: 1, expires_in: 60 },
    })
    t.equal(signed.status, 200, signed.text)
    t.equal(
      (await download((signed.body as { url: string }).url, null)).bytes.toString(),
      'v1 nfd\n',
      'a signed URL asked for in either spelling',
    )
    const hits = await env.request('POST', '/files/docs-a/unicode/search', {
      token: a.token,
      body: { query: name.slice(0, -4) },
    })
    t.same(
      (hits.body as { filename: string }[]).map((h) => h.filename),
      [composed],
      `search for ${JSON.stringify(name.slice(0, -4))} finds it`,
    )
  }
  t.match(await env.request('PATCH', path(decomposed), { token: a.token, body: { visibility: 'shared' } }), {
    status: 200,
    body: { name: composed, visibility: 'shared' },
  })
  t.equal((await env.request('DELETE', path(decomposed), { token: a.token })).status, 204)
  t.equal((await download(path(composed))).status, 404, 'deleted in one spelling, gone in the other')

  // Names stored before, as migration 0033 finds them: NFD rows made behind the platform's back.
  const put = (name: string) =>
    env.request('POST', '/files/docs-a/unicode', { token: a.token, body: { name, content_base64: 'eA==' } })
  for (const name of ['r\u00e9sum\u00e9.txt', 'na\u00efve.txt', 'other.txt']) t.equal((await put(name)).status, 201)
  await env.sql('update files set name = $1 where name = $2', ['re\u0301sume\u0301.txt', 'r\u00e9sum\u00e9.txt'], {
    behindTheBack: true,
  })
  await env.sql("update files set name = $1 where name = 'other.txt'", ['nai\u0308ve.txt'], { behindTheBack: true })
  await env.sql(
    readFileSync(join(import.meta.dirname, '../../src/platform/migrations/0033-file-names-nfc.sql'), 'utf8'),
    [],
    { behindTheBack: true },
  )
  const names = (
    await env.sql<{ name: string }>(
      'select name from files where collection_id = (select collection_id from files where name = $1)',
      ['na\u00efve.txt'],
      { behindTheBack: true },
    )
  ).map((r) => r.name)
  t.same(
    names.sort(),
    ['na\u00efve.txt', 'nai\u0308ve.txt', 'r\u00e9sum\u00e9.txt'].sort(),
    'migration 0033: an NFD name becomes NFC; a look-alike of an existing NFC name keeps its old spelling',
  )
})

t.test('delete: a file, then a collection cascades to its files and blobs', async (t) => {
  await collection('gone')
  await env.request('POST', '/files/docs-a/gone', { token: a.token, body: { name: 'one.txt', content_base64: 'MQ==' } })
  await env.request('POST', '/files/docs-a/gone', { token: a.token, body: { name: 'one.txt', content_base64: 'Mg==' } })
  await env.request('POST', '/files/docs-a/gone', { token: a.token, body: { name: 'two.txt', content_base64: 'Mw==' } })
  const objects = (
    await env.sql<{ object_name: string }>(
      "select v.object_name from file_versions v join files f on f.id = v.file_id join resources r on r.id = f.collection_id where r.name = 'gone'",
    )
  ).map((r) => r.object_name)
  t.equal(objects.length, 3)
  const { openBlobStore } = await import('../../src/platform/blob-store.ts')
  const { natsNames } = await import('../../src/platform/nats-names.ts')
  const store = await openBlobStore(env.platform.nc, natsNames(env.config.NATS_PREFIX))
  for (const o of objects) t.ok(await store.info(o), `${o} stored`)
  t.equal((await env.request('DELETE', '/files/docs-a/gone/one.txt', { token: a.token })).status, 204)
  t.equal((await download('/files/docs-a/gone/one.txt')).status, 404)
  t.equal((await env.request('DELETE', '/api/v1/collections/docs-a/gone', { token: a.token })).status, 204)
  t.same(
    (
      await env.sql(
        "select count(*)::int as n from files f join resources r on r.id = f.collection_id where r.name = 'gone'",
      )
    )[0],
    { n: 0 },
  )
  await eventually(async () => {
    for (const o of objects) if ((await store.info(o)) !== null) return undefined
    return true
  }, 'every blob of the collection deleted')
  t.pass('blobs gone')
})
