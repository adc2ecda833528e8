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
  for (const [name, size] of [['small', 20], ['big', 100]] as const) {
    const res = await env.request('POST', '/api/v1/collections', { token, body: { namespace: 'media', name, max_file_size_mb: size } })
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
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers } }, (res) => {
      state.answered = true
      let body = ''
      res.on('data', (c: Buffer) => (body += c.toString()))
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body, sentBytes: sent })
        req.destroy()
      })
    })
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

t.test('a 200 MB upload to a 20 MB limit is refused while streaming; memory does not grow by the upload size', async (t) => {
  const watch = rssWatch()
  const res = await post('/files/media/small?name=huge.bin', 200 * MB, { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' })
  const grew = watch.stop()
  t.equal(res.status, 413, res.body)
  t.match(JSON.parse(res.body), { code: 'file.too_large' })
  t.ok(res.sentBytes < 200 * MB, `the refusal came before the whole body was sent (${String(res.sentBytes / MB)} MB sent)`)
  t.ok(grew < 80 * MB, `RSS grew ${(grew / MB).toFixed(1)} MB during a 200 MB upload`)
  t.same(await env.sql("select count(*)::int as n from files where name = 'huge.bin'"), [{ n: 0 }])
  await eventually(async () => ((await env.sql('select count(*)::int as n from file_blob_garbage'))[0]?.['n'] === 0 ? true : undefined), 'no object left behind')
})

t.test('a declared Content-Length over the limit is refused before the body is read', async (t) => {
  const res = await post('/files/media/small?name=declared.bin', 30 * MB, { 'content-type': 'application/octet-stream', 'content-length': 30 * MB })
  t.equal(res.status, 413, res.body)
  t.ok(res.sentBytes < 30 * MB, `answered after ${String(res.sentBytes / MB)} MB`)
  const form = await post('/files/media/small', 30 * MB, { 'content-type': 'multipart/form-data; boundary=xyz', 'content-length': 30 * MB })
  t.equal(form.status, 413)
})

t.test('a 50 MB upload and download stream through with small memory growth', async (t) => {
  const piece = Buffer.alloc(MB, 'abcdefghij')
  const expected = createHash('sha256')
  for (let i = 0; i < 50; i++) expected.update(piece)
  const digest = expected.digest('hex')

  const up = rssWatch()
  const res = await post('/files/media/big?name=fifty.bin', 50 * MB, { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' })
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
