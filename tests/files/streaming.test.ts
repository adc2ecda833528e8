import { createHash } from 'node:crypto'
import http from 'node:http'
import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Uploads and downloads stream (gateway/blob-transfer.ts): the limits are enforced while the body
 * arrives, and neither direction holds a file in memory. The platform runs in this process, so
 * its memory is this process's: RSS is sampled while the bytes flow and its growth compared with
 * the size of the transfer (generous bounds: GC timing varies; the point is "not the file size").
 */
let env: TestPlatform
let token: string
const MB = 1024 * 1024

t.before(async () => {
  env = await startTestPlatform(t, { FILES_SWEEP_SECONDS: '0.2' })
  token = (await env.createUser('stream@test.local')).token
  for (const [name, size] of [
    ['small', 20],
    ['big', 100],
  ] as const) {
    const res = await env.request('POST', '/api/v1/collections', {
      token,
      body: { namespace: 'media', name, max_file_size_mb: size },
    })
    if (res.status !== 201) throw new Error(res.text)
  }
})

/** Samples RSS every 20 ms until stopped; answers the peak growth over the baseline. */
function rssWatch(): { stop(): number } {
  global.gc?.()
  const base = process.memoryUsage().rss
  let peak = base
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss)
  }, 20)
  return {
    stop() {
      clearInterval(timer)
      peak = Math.max(peak, process.memoryUsage().rss)
      return peak - base
    },
  }
}

interface Sent {
  status: number
  body: string
  sentBytes: number
}

/** POSTs `total` bytes (1 MiB pieces of one buffer) with backpressure; stops sending once the response arrives. */
function post(path: string, total: number, headers: Record<string, string | number>): Promise<Sent> {
  const url = new URL(`${env.base}${path}`)
  const piece = Buffer.alloc(MB, 'abcdefghij')
  return new Promise((resolve, reject) => {
    let sent = 0
    const state = { answered: false }
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, ...headers },
      },
      (res) => {
        state.answered = true
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body, sentBytes: sent })
          req.destroy()
        })
      },
    )
    req.on('error', (err) => (state.answered ? undefined : reject(err)))
    const pump = () => {
      while (!state.answered && sent < total) {
        const n = Math.min(MB, total - sent)
        sent += n
        if (!req.write(n === MB ? piece : piece.subarray(0, n))) {
          req.once('drain', pump)
          return
        }
      }
      if (!state.answered) req.end()
    }
    pump()
  })
}

t.test(
  'a 200 MB upload to a 20 MB limit is refused while streaming; memory does not grow by the upload size',
  async (t) => {
    const watch = rssWatch()
    const res = await post('/files/media/small?name=huge.bin', 200 * MB, {
      'content-type': 'application/octet-stream',
      'transfer-encoding': 'chunked',
    })
    const grew = watch.stop()
    t.equal(res.status, 413, res.body)
    t.match(JSON.parse(res.body), { code: 'file.too_large' })
    t.ok(
      res.sentBytes < 200 * MB,
      `the refusal came before the whole body was sent (${String(res.sentBytes / MB)} MB sent)`,
    )
    t.ok(grew < 80 * MB, `RSS grew ${(grew / MB).toFixed(1)} MB during a 200 MB upload`)
    t.same(await env.sql("select count(*)::int as n from files where name = 'huge.bin'"), [{ n: 0 }])
    await eventually(
      async () =>
        (await env.sql('select count(*)::int as n from file_blob_garbage'))[0]?.['n'] === 0 ? true : undefined,
      'no object left behind',
    )
  },
)

t.test('a declared Content-Length over the limit is refused before the body is read', async (t) => {
  const res = await post('/files/media/small?name=declared.bin', 30 * MB, {
    'content-type': 'application/octet-stream',
    'content-length': 30 * MB,
  })
  t.equal(res.status, 413, res.body)
  t.ok(res.sentBytes < 30 * MB, `answered after ${String(res.sentBytes / MB)} MB`)
  const form = await post('/files/media/small', 30 * MB, {
    'content-type': 'multipart/form-data; boundary=xyz',
    'content-length': 30 * MB,
  })
  t.equal(form.status, 413)
})

t.test('a 50 MB upload and download stream through with small memory growth', async (t) => {
  const piece = Buffer.alloc(MB, 'abcdefghij')
  const expected = createHash('sha256')
  for (let i = 0; i < 50; i++) expected.update(piece)
  const digest = expected.digest('hex')

  const up = rssWatch()
  const res = await post('/files/media/big?name=fifty.bin', 50 * MB, {
    'content-type': 'application/octet-stream',
    'transfer-encoding': 'chunked',
  })
  const upGrowth = up.stop()
  t.equal(res.status, 201, res.body)
  t.match(JSON.parse(res.body), { size_bytes: 50 * MB, versions: [{ hash_sha256: digest }] })
  t.ok(upGrowth < 60 * MB, `upload: RSS grew ${(upGrowth / MB).toFixed(1)} MB for 50 MB`)

  const down = rssWatch()
  const got = await fetch(`${env.base}/files/media/big/fifty.bin`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(got.status, 200)
  t.equal(got.headers.get('content-length'), String(50 * MB))
  const h = createHash('sha256')
  let n = 0
  for await (const c of got.body as unknown as AsyncIterable<Uint8Array>) {
    h.update(c)
    n += c.length
  }
  const downGrowth = down.stop()
  t.equal(n, 50 * MB)
  t.equal(h.digest('hex'), digest)
  t.ok(downGrowth < 60 * MB, `download: RSS grew ${(downGrowth / MB).toFixed(1)} MB for 50 MB`)
})

t.test("the blob store's streamed put writes the object store's layout", async (t) => {
  // put publishes the pieces it gets as chunks (src/platform/blob-store.ts), not through the
  // object store client: the client must still read what it wrote, and a failure leaves nothing
  const { openBlobStore } = await import('../../src/platform/blob-store.ts')
  const { natsNames } = await import('../../src/platform/nats-names.ts')
  const { jetstream, jetstreamManager } = await import('@nats-io/jetstream')
  const { Objm } = await import('@nats-io/obj')
  const names = natsNames(env.config.NATS_PREFIX)
  const store = await openBlobStore(env.platform.nc, names)
  const client = await new Objm(jetstream(env.platform.nc)).open(names.bucket('FILES'))
  // uneven pieces, one above a chunk (split without copying), one empty
  const pieces = [
    Buffer.alloc(1000, 'a'),
    Buffer.alloc(1300 * 1024, 'b'),
    Buffer.alloc(0),
    Buffer.alloc(70 * 1024, 'c'),
  ]
  const whole = Buffer.concat(pieces)
  const stream = (parts: Buffer[], fail?: Error) =>
    new ReadableStream<Uint8Array>({
      pull(c) {
        const next = parts.shift()
        if (next !== undefined) c.enqueue(next)
        else if (fail !== undefined) c.error(fail)
        else c.close()
      },
    })
  const info = await store.put('test/layout', stream([...pieces]))
  t.equal(info.size, whole.length)
  t.equal(info.chunks, 5, 'as given: 1000 B; 1300 KiB split into 512 + 512 + 276 KiB; 70 KiB (the empty piece is none)')
  t.equal(info.sha256, createHash('sha256').update(whole).digest('hex'))
  const viaClient = await client.getBlob('test/layout')
  t.ok(
    viaClient !== null && Buffer.from(viaClient).equals(whole),
    'the object store client reads it (and checks the digest)',
  )
  t.ok((await store.readAll('test/layout', 10 * MB))?.equals(whole), 'so does ours')

  // a second put of the name replaces it, and the first one's chunks are purged
  const again = await store.put('test/layout', stream([Buffer.from('short')]))
  t.ok((await store.readAll('test/layout', MB))?.equals(Buffer.from('short')))
  t.not(again.nuid, info.nuid)
  const jsm = await jetstreamManager(env.platform.nc)
  const subjects = async (nuid: string) =>
    (
      await jsm.streams.info(`OBJ_${names.bucket('FILES')}`, {
        subjects_filter: `$O.${names.bucket('FILES')}.C.${nuid}`,
      })
    ).state.subjects ?? {}
  t.same(await subjects(info.nuid), {}, 'old chunks purged')

  // a stream that fails half-way (after two chunks went out) leaves neither chunks nor an object
  const messages = async () => (await jsm.streams.info(`OBJ_${names.bucket('FILES')}`)).state.messages
  const before = await messages()
  const failing = stream([Buffer.alloc(600 * 1024, 'x')], new Error('client went away'))
  await t.rejects(store.put('test/broken', failing), /client went away/)
  t.equal(await store.info('test/broken'), null)
  t.equal(await messages(), before, 'the chunks written before the failure are purged')
})
