import { DataBuffer, DenoBuffer, Parser, ProtocolHandler, State } from '@nats-io/nats-core/internal'
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
 * Both patch nats.js internals, checked against @nats-io/nats-core 3.4.0 (pinned in package.json);
 * tests/files/nats-large-messages.test.ts checks the behaviour they rely on. Applied once per process.
 */

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

let applied = false

export function applyLargeMessages(): void {
  if (applied) return
  applied = true
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
