import busboy from 'busboy'
import type { HttpResponse } from 'uWebSockets.js'
import { AppError } from '../src/kernel/errors.ts'
import { CHUNK_BYTES, type BlobInfo, type BlobStore } from '../src/platform/blob-store.ts'
import { giveBackChunk, takeChunk } from '../src/platform/chunk-pool.ts'

/*
 * Streaming file bodies between a client and the NATS object store (routes with `blob`,
 * src/api/route.ts). Nothing here holds a whole file: memory per transfer is bounded by
 * QUEUE_HIGH_WATER plus the object store's publish window (src/platform/blob-store.ts), whatever
 * the file size.
 *
 * Upload (`BodyQueue` → `receiveUpload`): the request body is read with uWS `onData`; the socket
 * is paused as soon as the route is matched (the service has not said yet whether the caller may
 * upload) and whenever more than QUEUE_HIGH_WATER bytes wait, and resumed when the consumer —
 * the object store's `put`, which takes a piece only when its window of unacked chunks has room —
 * has taken them. The bytes uWS lends are copied once, straight into object-store-sized chunks
 * (CHUNK_BYTES), which `put` publishes as they are: one copy of the file in this process before
 * the NATS client's own write buffer, where assembling chunks later would be a second. So a client sending
 * faster than NATS stores is slowed down by TCP, not buffered. Bytes are counted as they pass:
 * one past the plan's `max_bytes` errors the stream, `put` purges the chunks it wrote, and the
 * client gets 413 without the rest of its body being read.
 * multipart/form-data goes through busboy (one `file` part; its write callback is held until the
 * file part is consumed, so backpressure holds through the parser); any other content type is the
 * raw file.
 *
 * Download (`sendBlob`): chunks are fetched one by one from the object store (direct gets,
 * src/platform/blob-store.ts) and written with uWS `tryEnd` under Content-Length; when the socket
 * cannot take a chunk, the next one is not fetched until `onWritable` says it drained.
 */
const QUEUE_HIGH_WATER = 1024 * 1024
/** Room for multipart boundaries and form fields when a declared Content-Length is compared with the plan. */
export const MULTIPART_SLACK = 256 * 1024

export const tooLarge = (max: number): AppError =>
  new AppError(
    413,
    'file.too_large',
    `the file is larger than the ${String(max)} bytes this upload may take (max_file_size_mb, or what is left of max_total_size_gb)`,
  )

/** Request body chunks of CHUNK_BYTES (the last one shorter), pulled on demand, with uWS paused while enough wait. */
export class BodyQueue {
  private chunks: Buffer[] = []
  private queued = 0
  /** The chunk being filled and how much of it is. */
  private filling: Buffer | null = null
  private used = 0
  /** Bytes still announced by Content-Length (null: unknown), so a small body gets a small buffer. */
  private expected: number | null
  private ended = false
  private paused = false
  private discarding = false
  private wake: (() => void) | null = null
  private failure: Error | null = null

  private readonly res: HttpResponse

  constructor(res: HttpResponse, expectedBytes: number | null = null) {
    this.res = res
    this.expected = expectedBytes
    res.onData((ab, isLast) => {
      if (!this.discarding) {
        // uWS reuses the ArrayBuffer after this callback: copied now, into the chunk being filled
        this.take(new Uint8Array(ab))
        if (isLast) this.seal()
        if (this.queued >= QUEUE_HIGH_WATER) this.pause()
      }
      if (isLast) this.ended = true
      this.notify()
    })
    // nothing is read before the service has accepted the upload
    this.pause()
  }

  private take(src: Uint8Array): void {
    let at = 0
    while (at < src.length) {
      if (this.filling === null) {
        const left = this.expected === null ? CHUNK_BYTES : this.expected
        // a body longer than announced (it cannot be under uWS) would just get full-size chunks;
        // those come from the pool (src/platform/chunk-pool.ts) and go back once stored
        this.filling = left > 0 && left < CHUNK_BYTES ? Buffer.allocUnsafe(left) : takeChunk()
        this.used = 0
      }
      const n = Math.min(src.length - at, this.filling.length - this.used)
      this.filling.set(src.subarray(at, at + n), this.used)
      this.used += n
      at += n
      this.queued += n
      if (this.expected !== null) this.expected -= n
      if (this.used === this.filling.length) this.seal()
    }
  }

  /** The chunk being filled joins the queue (the end of the body, or it is full). */
  private seal(): void {
    if (this.filling !== null && this.used > 0)
      this.chunks.push(this.used === this.filling.length ? this.filling : this.filling.subarray(0, this.used))
    this.filling = null
    this.used = 0
  }

  private pause(): void {
    if (this.paused || this.failure !== null) return
    this.paused = true
    this.res.pause()
  }

  private resume(): void {
    if (!this.paused || this.failure !== null) return
    this.paused = false
    this.res.resume()
  }

  private notify(): void {
    const w = this.wake
    this.wake = null
    w?.()
  }

  /** The client went away: every waiting and later `next()` fails. */
  abort(): void {
    this.failure = new Error('the client closed the connection')
    this.notify()
  }

  /** The next chunk, or null at the end of the body. */
  async next(): Promise<Buffer | null> {
    while (this.chunks.length === 0 && !this.ended) {
      if (this.failure !== null) throw this.failure
      this.resume()
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
    }
    if (this.failure !== null) throw this.failure
    const c = this.chunks.shift()
    if (c === undefined) return null
    this.queued -= c.length
    if (this.queued < QUEUE_HIGH_WATER / 2) this.resume()
    return c
  }

  /** Stops keeping what arrives (after a refusal): memory stays flat while the client finishes sending. */
  discard(): void {
    this.discarding = true
    this.chunks = []
    this.filling = null
    this.used = 0
    this.queued = 0
    this.resume()
  }
}

/** A byte stream that errors one byte past `max`; its `pull` fetches the next chunk only when `put` asks. */
function limited(
  source: () => Promise<Uint8Array | null>,
  max: number,
  counted: { bytes: number },
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const c = await source()
        if (c === null) {
          controller.close()
          return
        }
        counted.bytes += c.length
        if (counted.bytes > max) {
          controller.error(tooLarge(max))
          return
        }
        controller.enqueue(c)
      },
    },
    { highWaterMark: 0 },
  )
}

export interface ReceivedUpload {
  info: BlobInfo
  filename: string | null
  contentType: string
  fields: Record<string, string>
}

/**
 * Streams the request body into `object`. Resolves with what was stored; rejects with an AppError
 * (413 over `max`, 422 a malformed or file-less form) after the object store dropped the chunks.
 */
export async function receiveUpload(
  q: BodyQueue,
  store: BlobStore,
  object: string,
  max: number,
  contentType: string,
): Promise<ReceivedUpload> {
  const counted = { bytes: 0 }
  const failed = (err: unknown): never => {
    q.discard()
    if (err instanceof AppError) throw err
    // the limit error travels through the object store client, which may wrap it
    if (err instanceof Error && err.cause instanceof AppError) throw err.cause
    throw err
  }
  if (!contentType.toLowerCase().startsWith('multipart/form-data')) {
    // the queue's chunks are nobody else's: each returns to the pool once stored
    const info = await store
      .put(
        object,
        limited(() => q.next(), max, counted),
        { giveBack: true },
      )
      .catch(failed)
    return {
      info,
      filename: null,
      contentType:
        contentType === ''
          ? 'application/octet-stream'
          : contentType.split(';')[0]?.trim() || 'application/octet-stream',
      fields: {},
    }
  }
  let bb: busboy.Busboy
  try {
    bb = busboy({
      headers: { 'content-type': contentType },
      preservePath: true,
      limits: { files: 1, fields: 32, fieldSize: 64 * 1024, parts: 40, headerPairs: 50 },
    })
  } catch (err) {
    q.discard()
    throw new AppError(
      422,
      'file.invalid_form',
      `not a readable multipart/form-data body: ${err instanceof Error ? err.message : String(err)}`,
    )
  }
  const fields: Record<string, string> = {}
  bb.on('field', (name, value) => {
    fields[name] = value
  })
  let parseError: Error | null = null
  bb.on('error', (err: Error) => {
    parseError = err
  })
  const stored = new Promise<ReceivedUpload | null>((resolve, reject) => {
    let sawFile = false
    bb.on('file', (_name, file, meta) => {
      sawFile = true
      const it = file[Symbol.asyncIterator]()
      const source = async (): Promise<Uint8Array | null> => {
        if (parseError !== null) throw parseError
        const r = (await it.next()) as IteratorResult<Buffer>
        return r.done === true ? null : r.value
      }
      store.put(object, limited(source, max, counted)).then(
        (info) =>
          resolve({
            info,
            filename: meta.filename ?? null,
            contentType: meta.mimeType || 'application/octet-stream',
            fields,
          }),
        (err: unknown) => {
          file.resume() // let the parser run to the end of the body
          reject(err)
        },
      )
    })
    bb.on('close', () => {
      if (!sawFile) resolve(null)
    })
  })
  // feed the parser: each write waits for its callback, which busboy holds while the file part is not consumed
  const pump = (async () => {
    for (;;) {
      const c = await q.next()
      if (c === null) break
      if (parseError !== null) throw parseError
      await new Promise<void>((resolve, reject) => bb.write(c, (err) => (err ? reject(err) : resolve())))
    }
    bb.end()
  })()
  pump.catch(() => undefined)
  const result = await Promise.race([stored, pump.then(() => stored)]).catch(failed)
  if (parseError !== null)
    failed(
      new AppError(422, 'file.invalid_form', `malformed multipart/form-data: ${String((parseError as Error).message)}`),
    )
  if (result === null) failed(new AppError(422, 'file.missing', 'the form has no file part'))
  // the fields after the file part arrive with the rest of the body
  await pump.catch(failed)
  return result as ReceivedUpload
}

/** How a download answers: the object and the headers describing it. */
export interface BlobReply {
  object: string
  size: number
  content_type: string
  filename: string
  sha256: string
  version: number
}

/** `attachment; filename="…"; filename*=UTF-8''…` — quotes and non-ASCII never break the header. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_')
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`
}

interface WriteState {
  aborted: boolean
  done: boolean
  requestId: string
  headers: [string, string][]
}

/**
 * Streams a stored object to the client with Content-Length. Resolves when the last byte was
 * handed to uWS; a failure after the head was sent closes the connection (the client sees a short
 * body, never a silently different file).
 */
export async function sendBlob(
  res: HttpResponse,
  state: WriteState,
  store: BlobStore,
  blob: BlobReply,
  extra: Record<string, string>,
): Promise<void> {
  const info = await store.info(blob.object)
  if (info === null) throw new AppError(404, 'file.not_found', 'the file content is gone')
  if (state.aborted || state.done) return
  state.done = true
  const total = info.size
  let headSent = false
  const head = () => {
    res.writeStatus('200 OK')
    res.writeHeader('x-request-id', state.requestId)
    for (const [k, v] of state.headers) res.writeHeader(k, v)
    for (const k in extra) res.writeHeader(k, extra[k] as string)
    res.writeHeader('content-type', blob.content_type)
    res.writeHeader('content-disposition', contentDisposition(blob.filename))
    res.writeHeader('etag', `"${info.sha256}"`)
    res.writeHeader('x-file-version', String(blob.version))
    res.writeHeader('cache-control', 'private, no-store')
    res.writeHeader('x-content-type-options', 'nosniff')
    headSent = true
  }
  if (total === 0) {
    res.cork(() => {
      head()
      res.end()
    })
    return
  }
  try {
    for await (const chunk of store.chunks(info)) {
      if (state.aborted) return
      // uWS takes the view as it is (a RecognizedString may be any typed array): no copy of the chunk
      const offset = res.getWriteOffset()
      let ok = false
      let finished = false
      res.cork(() => {
        if (!headSent) head()
        ;[ok, finished] = res.tryEnd(chunk, total)
      })
      if (ok || finished) {
        giveBackChunk(chunk)
        continue
      }
      // the socket is full: wait until it drained what it holds of this chunk, then send the rest
      await new Promise<void>((resolve) => {
        res.onWritable((at) => {
          if (state.aborted) {
            resolve()
            return true
          }
          const [again, done] = res.tryEnd(chunk.subarray(at - offset), total)
          if (again || done) resolve()
          return again
        })
        res.onAborted(() => {
          state.aborted = true
          resolve()
        })
      })
      // the rest of the chunk went to the socket (or into uWS's own buffer): it is ours again
      if (!state.aborted) giveBackChunk(chunk)
    }
  } catch (err) {
    if (!state.aborted) res.close()
    throw err
  }
}
