/*
 * Reused buffers for the bytes of files in transit (src/platform/blob-store.ts,
 * gateway/blob-transfer.ts, the NATS parser patch in nats-large-messages.ts). A fresh buffer per
 * chunk costs more than the copy into it: its pages are new to the process (a fault and a zeroed
 * page each), and dead ones pile up until V8 collects them, which is what grew RSS by ~32 MB per
 * 50 MB transfer. A buffer comes back only from a caller that holds no reference to it any more
 * (an acknowledged chunk publish, a chunk handed to the client's socket), and only when the pool
 * made it, so at most POOL_MAX stay alive.
 */
export const POOL_CHUNK_BYTES = 512 * 1024
/** Each buffer holds a chunk plus room for the headers of the message that carries it (a direct get's reply). */
export const POOL_BUFFER_BYTES = POOL_CHUNK_BYTES + 4096
/** 8 MiB kept at most: two transfers' windows. */
const POOL_MAX = 16

const free: ArrayBuffer[] = []
/** The buffers this pool made: nothing else (a socket's read buffer, a caller's own) is ever taken back. */
const ours = new WeakSet<ArrayBuffer>()

/** `bytes` (at most POOL_BUFFER_BYTES) at offset 0 of a pooled ArrayBuffer; the contents are undefined. */
export function takeChunk(bytes = POOL_CHUNK_BYTES): Buffer {
  let ab = free.pop()
  if (ab === undefined) {
    ab = Buffer.allocUnsafeSlow(POOL_BUFFER_BYTES).buffer as ArrayBuffer
    ours.add(ab)
  }
  return Buffer.from(ab, 0, bytes)
}

/**
 * Returns the whole buffer behind `view` to the pool, when the pool made it. The caller promises
 * that nothing reads or writes any part of that buffer any more.
 */
export function giveBackChunk(view: Uint8Array): void {
  const ab = view.buffer
  if (ab instanceof ArrayBuffer && ours.has(ab) && free.length < POOL_MAX && !free.includes(ab)) free.push(ab)
}

/** How many buffers wait in the pool (tests). */
export const pooledChunks = (): number => free.length
