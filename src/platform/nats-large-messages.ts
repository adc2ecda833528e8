import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { DataBuffer, DenoBuffer, Parser, ProtocolHandler, State } from '@nats-io/nats-core/internal'
import type { Logger } from '../kernel/log.ts'
import { POOL_BUFFER_BYTES, takeChunk } from './chunk-pool.ts'

/*
 * Large NATS messages (the object store's 512 KiB chunks) without the client's extra copies.
 * Measured on a 50 MB transfer (bench/files.bench.ts, bench/FINDINGS.md "files"):
 *
 * - Receiving: a message that spans socket reads is gathered in a DenoBuffer that starts at the
 *   size of the first read (64 KiB) and doubles, copying what it holds and zero-filling the new
 *   buffer each time: ~3× the message's bytes allocated and copied. Here, as soon as the parser has
 *   started such a message, its buffer is replaced by one that holds its announced size (from
 *   chunk-pool.ts for an object store chunk; uninitialised: every byte is written before it is handed out), so
 *   each byte is copied once. A consumer done with such a message's data may give its buffer back
 *   (`giveBackChunk`).
 * - Sending: the outbound queue concatenates the pending commands into one new buffer per flush, a
 *   copy of every payload. A payload registered with `sendUncopied` (the caller promises never to
 *   change it again) is handed to the socket as it is; the commands around it are still
 *   concatenated, and the write batching (nats-write-batching.ts) gathers them in one `writev`.
 *
 * Both patch nats.js internals, written for @nats-io/nats-core 3.4.0 (pinned in package.json);
 * tests/files/nats-large-messages.test.ts checks the behaviour they rely on. They change every
 * connection of the process, so connectNats applies them (once per process), beside the write
 * batching. On any other installed version (read from the package's package.json) they are not
 * applied and a warning says so once: the internals they replace may have changed shape, and stock
 * nats.js is only slower (sendUncopied's mark is then ignored, chunk-pool.ts takes back only its
 * own buffers).
 */

/** The @nats-io/nats-core version the patches were written for. */
export const PATCHED_NATS_CORE = '3.4.0'

/** Messages below this are left to the parser's own buffering (they seldom span reads). */
const LARGE_MESSAGE = 64 * 1024

const uncopied = new WeakSet<Uint8Array>()

/** Marks a payload the socket may take by reference: it must not change after it was published. */
export function sendUncopied<T extends Uint8Array>(payload: T): T {
  uncopied.add(payload)
  return payload
}

interface ParserState {
  state: number
  ma: { size: number }
  msgBuf?: DenoBuffer
}

interface Outbound {
  buffers: Uint8Array[]
  byteLength: number
}

interface Handler {
  infoReceived: boolean
  connected: boolean
  outbound: Outbound
  transport: { send(frame: Uint8Array): void }
}

/** The installed @nats-io/nats-core's version: its package.json, above the module the package name resolves to. */
export function installedNatsCore(): string | undefined {
  let dir = dirname(createRequire(import.meta.url).resolve('@nats-io/nats-core'))
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string }
      if (pkg.name === '@nats-io/nats-core') return pkg.version
    } catch {
      // no package.json at this level: look further up
    }
    const up = dirname(dir)
    if (up === dir) return undefined
    dir = up
  }
}

let applied = false

/** Patches nats.js for large messages when the installed version is the one the patches were written for; else warns, once. */
export function applyLargeMessages(
  log: Pick<Logger, 'warn'>,
  installed: string | undefined = installedNatsCore(),
): void {
  if (applied) return
  applied = true
  if (installed !== PATCHED_NATS_CORE) {
    log.warn(
      { installed: installed ?? 'unknown', patched_for: PATCHED_NATS_CORE },
      'nats.js large-message patches not applied: written for another @nats-io/nats-core version (large messages take the stock, copying path)',
    )
    return
  }
  const MSG_PAYLOAD: number = State.MSG_PAYLOAD
  const parserProto = Parser.prototype as unknown as { parse(buf: Uint8Array): void }
  const parse = parserProto.parse
  parserProto.parse = function parseLarge(this: ParserState, buf: Uint8Array): void {
    parse.call(this, buf)
    const gathering = this.msgBuf
    if (gathering === undefined || this.state !== MSG_PAYLOAD) return
    const size = this.ma.size
    if (size < LARGE_MESSAGE || gathering.capacity >= size) return
    // a pooled buffer only for a message that fills most of it (an object store chunk), so a
    // 100 KiB reply does not hold 516 KiB until it is collected
    const whole =
      size <= POOL_BUFFER_BYTES && size > POOL_BUFFER_BYTES / 2 ? takeChunk(size) : Buffer.allocUnsafeSlow(size)
    // a DenoBuffer over the whole ArrayBuffer (a view, not a copy), emptied: it grows by reslicing
    const sized = new DenoBuffer(whole.buffer as ArrayBuffer)
    sized.reset()
    sized.write(gathering.bytes({ copy: false }))
    this.msgBuf = sized
  }

  const handlerProto = ProtocolHandler.prototype as unknown as { flushPending(): void }
  const flushPending = handlerProto.flushPending
  handlerProto.flushPending = function flushUncopied(this: Handler): void {
    const out = this.outbound
    if (!this.infoReceived || !this.connected || !out.buffers.some((b) => uncopied.has(b))) {
      flushPending.call(this)
      return
    }
    const buffers = out.buffers.splice(0)
    out.byteLength = 0
    let run: Uint8Array[] = []
    const sendRun = () => {
      if (run.length > 0) this.transport.send(run.length === 1 ? (run[0] as Uint8Array) : DataBuffer.concat(...run))
      run = []
    }
    for (const b of buffers) {
      if (uncopied.has(b)) {
        sendRun()
        this.transport.send(b)
      } else run.push(b)
    }
    sendRun()
  }
}
