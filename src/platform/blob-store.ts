import { createHash } from 'node:crypto'
import {
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
} from '@nats-io/jetstream'
import { Objm, setSha256Backend, StorageType, type ObjectStore } from '@nats-io/obj'
import { headers, nuid, type NatsConnection } from '@nats-io/transport-node'
import { giveBackChunk, POOL_CHUNK_BYTES } from './chunk-pool.ts'
import { applyLargeMessages, sendUncopied } from './nats-large-messages.ts'
import type { NatsNames } from './nats-names.ts'
import { streamReplicasOf } from './stream-replicas.ts'

/*
 * Blobs (file versions) in ONE NATS object store bucket, `FILES`. Object names come
 * from ids (`v/<version id>`), never from user file names. Used by the gateway (streaming uploads
 * and downloads, gateway/blob-transfer.ts) and the files service; no database here.
 *
 * Streamed writes (`put`) do NOT use the client's `put`, which re-packs every piece it reads into
 * its own chunk buffer (one more copy of the file) and waits for each chunk's ack before sending
 * the next. Ours publishes the pieces it is given as chunks, unchanged (the gateway hands it
 * 512 KiB pieces, gateway/blob-transfer.ts), with up to PUT_WINDOW publishes awaiting their ack;
 * it reads the next piece only when the window has room, so a producer that waits for `pull` is
 * still flow-controlled. Chunks need not be of equal size (readers take them as they come).
 * The object's layout is the object store's: chunks on `$O.<bucket>.C.<nuid>`, the info JSON on
 * `$O.<bucket>.M.<base64url name>` with a subject rollup, so `info`, `delete` and the client's
 * `get` work on it. On a failure the chunks written are purged and nothing is left.
 * Chunk payloads reach the socket by reference (`sendUncopied`, nats-large-messages.ts, applied
 * when a store is opened), and with `giveBack` they return to chunk-pool.ts once acknowledged.
 * Reads do NOT use the client's `get`: it feeds a push consumer into an unbounded ReadableStream,
 * so a slow reader would hold the whole object in memory. `chunks()` instead fetches one chunk at
 * a time with a JetStream direct get (the bucket's stream has allow_direct), only when the consumer
 * asks for the next one, and checks the SHA-256 digest at the end.
 */
export const FILES_BUCKET = 'FILES'
/** 512 KiB (NATS's default max_payload is 1 MiB; `put` clamps to the server's): 4× fewer acked publishes than the client's 128 KiB default. */
export const CHUNK_BYTES = POOL_CHUNK_BYTES
/**
 * Chunk publishes of one `put` in flight at once: the acks of a single publisher come back in
 * order, and waiting for each before sending the next made an upload one round trip per chunk.
 * 4 × 512 KiB is the most a put holds beyond the piece it reads.
 */
const PUT_WINDOW = 4

// The object store client hashes with a pure-JS SHA-256 unless told otherwise: ~5× the CPU of Node's.
setSha256Backend('native')

export interface BlobInfo {
  name: string
  size: number
  /** Hex SHA-256 of the content. */
  sha256: string
  chunks: number
  nuid: string
}

export interface BlobStore {
  bucket: string
  /**
   * Stores a stream under `name` (chunked); rejects (and leaves nothing) when the stream errors.
   * `giveBack`: the stream's pieces are handed over for good; each goes back to chunk-pool.ts
   * once its publish was acknowledged.
   */
  put(name: string, data: ReadableStream<Uint8Array>, options?: { giveBack?: boolean }): Promise<BlobInfo>
  putBytes(name: string, data: Uint8Array): Promise<BlobInfo>
  info(name: string): Promise<BlobInfo | null>
  /**
   * The content, one stored chunk at a time, fetched on demand; throws on a digest mismatch. A
   * consumer done with a chunk (before asking for the next) may hand it to chunk-pool.ts's
   * `giveBackChunk`.
   */
  chunks(info: BlobInfo): AsyncGenerator<Uint8Array>
  /** The whole content, refused (null) above `maxBytes`. */
  readAll(name: string, maxBytes: number): Promise<Buffer | null>
  delete(name: string): Promise<void>
}

/** `SHA-256=<base64url>` (the object store's digest) → hex. */
export function digestHex(digest: string): string {
  const b64 = digest.replace(/^SHA-256=/, '')
  return Buffer.from(b64.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('hex')
}

/** base64url WITH padding, as the object store client writes meta subjects and digests (its Base64UrlPaddedCodec). */
const b64urlPadded = (b: Buffer): string => b.toString('base64').replace(/\+/g, '-').replace(/\//g, '_')

function toInfo(i: { name: string; size: number; digest: string; chunks: number; nuid: string }): BlobInfo {
  return { name: i.name, size: i.size, sha256: digestHex(i.digest), chunks: i.chunks, nuid: i.nuid }
}

const opened = new WeakMap<NatsConnection, Map<string, Promise<BlobStore>>>()

/** Opens (creating when missing) the FILES bucket; one instance per connection and prefix. */
export function openBlobStore(nc: NatsConnection, names: NatsNames): Promise<BlobStore> {
  applyLargeMessages()
  let byBucket = opened.get(nc)
  if (byBucket === undefined) {
    byBucket = new Map()
    opened.set(nc, byBucket)
  }
  const bucket = names.bucket(FILES_BUCKET)
  let store = byBucket.get(bucket)
  if (store === undefined) {
    store = create(nc, bucket)
    // a failed open (NATS down at that moment) is retried by the next caller
    store.catch(() => byBucket.delete(bucket))
    byBucket.set(bucket, store)
  }
  return store
}

async function create(nc: NatsConnection, bucket: string): Promise<BlobStore> {
  const js: JetStreamClient = jetstream(nc)
  const os: ObjectStore = await new Objm(js).create(bucket, {
    storage: StorageType.File,
    replicas: streamReplicasOf(nc),
  })
  const jsm: JetStreamManager = await jetstreamManager(nc)
  const stream = `OBJ_${bucket}`
  /** The object store's subject of an object's chunks (`nuid` names one version of the object). */
  const chunkSubjectOf = (id: string): string => `$O.${bucket}.C.${id}`
  const info = async (name: string): Promise<BlobInfo | null> => {
    const i = await os.info(name)
    return i === null || i.deleted ? null : toInfo(i)
  }

  async function put(
    name: string,
    data: ReadableStream<Uint8Array>,
    options: { giveBack?: boolean } = {},
  ): Promise<BlobInfo> {
    const maxChunk = Math.min(CHUNK_BYTES, nc.info?.max_payload ?? CHUNK_BYTES)
    const old = await os.info(name)
    const id = nuid.next()
    const chunkSubject = chunkSubjectOf(id)
    const sha = createHash('sha256')
    const inFlight: Promise<PubAck>[] = []
    /** The pieces of the publishes in `inFlight`, in the same order. */
    const sent: Uint8Array[] = []
    /** Acknowledged: the server holds the bytes, so the socket is done with the piece too. */
    const acked = async (): Promise<void> => {
      await inFlight.shift()
      const piece = sent.shift()
      if (options.giveBack === true && piece !== undefined) giveBackChunk(piece)
    }
    let size = 0
    let chunks = 0
    const reader = data.getReader()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        // a piece above the server's max_payload is split without copying
        for (let at = 0; at < value.length; at += maxChunk) {
          const piece = at === 0 && value.length <= maxChunk ? value : value.subarray(at, at + maxChunk)
          sha.update(piece)
          size += piece.length
          chunks++
          // the piece is never written to again: the socket may take it without the client's copy
          const ack = js.publish(chunkSubject, sendUncopied(piece))
          ack.catch(() => undefined) // awaited below, in order; a later failure must not go unhandled meanwhile
          inFlight.push(ack)
          sent.push(piece)
          if (inFlight.length >= PUT_WINDOW) await acked()
        }
      }
      while (inFlight.length > 0) await acked()
      const meta = {
        name,
        description: '',
        options: { max_chunk_size: maxChunk },
        bucket,
        nuid: id,
        size,
        chunks,
        mtime: new Date().toISOString(),
        digest: `SHA-256=${b64urlPadded(sha.digest())}`,
        deleted: false,
      }
      const h = headers()
      h.set('Nats-Rollup', 'sub') // the new info replaces any earlier one of this name
      await js.publish(`$O.${bucket}.M.${b64urlPadded(Buffer.from(name))}`, JSON.stringify(meta), { headers: h })
      if (old !== null) await jsm.streams.purge(stream, { filter: chunkSubjectOf(old.nuid) }).catch(() => undefined)
      return toInfo(meta)
    } catch (err) {
      await Promise.allSettled(inFlight)
      await reader.cancel(err).catch(() => undefined)
      await jsm.streams.purge(stream, { filter: chunkSubject }).catch(() => undefined)
      throw err
    }
  }

  async function* chunks(i: BlobInfo): AsyncGenerator<Uint8Array> {
    const subject = chunkSubjectOf(i.nuid)
    const sha = createHash('sha256')
    const fetchAfter = (seq: number) => jsm.direct.getMessage(stream, { next_by_subj: subject, seq: seq + 1 })
    // one chunk read ahead: the next request is in flight while the consumer writes this one (2 chunks in memory at most)
    let next = i.chunks > 0 ? fetchAfter(0) : null
    for (let n = 0; n < i.chunks; n++) {
      const msg = await (next as ReturnType<typeof fetchAfter>)
      if (msg === null) throw new Error(`blob ${i.name}: chunk ${String(n + 1)} of ${String(i.chunks)} is missing`)
      next = n + 1 < i.chunks ? fetchAfter(msg.seq) : null
      // a read-ahead that fails after the consumer stopped must not surface as an unhandled rejection
      next?.catch(() => undefined)
      sha.update(msg.data)
      yield msg.data
    }
    if (sha.digest('hex') !== i.sha256) throw new Error(`blob ${i.name}: the content does not match its digest`)
  }
  return {
    bucket,
    put,
    putBytes: async (name, data) => toInfo(await os.putBlob({ name, options: { max_chunk_size: CHUNK_BYTES } }, data)),
    info,
    chunks,
    async readAll(name, maxBytes) {
      const i = await info(name)
      if (i === null) throw new Error(`blob ${name} does not exist`)
      if (i.size > maxBytes) return null
      const parts: Uint8Array[] = []
      for await (const c of chunks(i)) parts.push(c)
      return Buffer.concat(parts)
    },
    async delete(name) {
      // deleting a missing object is not an error: the sweeper may run twice
      await os.delete(name).catch((err: unknown) => {
        if (!/not found/i.test(String(err))) throw err
      })
    },
  }
}
