import type { HttpResponse } from 'uWebSockets.js'

/** Written from onWritable when nothing is queued: uWS drains its buffer only on a write. */
const NUDGE = Buffer.from(':\n')

/**
 * The write side of one SSE response. Frames written in one tick collect in `pending` and reach
 * uWS together from `flush` (one `cork(write)`, one `send()`), which the relay calls once per
 * event-loop turn (`SseBatch`) for every writer that got frames: the events of a NATS delivery
 * batch for one stream cost one syscall, not one each — the syscall is most of the per-event cost.
 * When uWS reports backpressure, frames wait in `queue` until `onWritable` flushes them. `owed`
 * (bytes written or queued since the socket last drained completely) is an upper bound of what
 * the client owes.
 *
 * Invariant: `pending` is empty while `blocked` (a blocked writer queues instead), so frames
 * leave in the order they were written.
 */
export class SseWriter {
  private response: HttpResponse | undefined
  private blocked = false
  private released = false
  private pending: Buffer[] = []
  private queue: Buffer[] = []
  private owedBytes = 0
  private drained: (() => void)[] = []
  private readonly maxBufferBytes: number
  private readonly batch: SseBatch
  /** What `corked` writes and what it got back; one closure per writer instead of one per flush. */
  private chunk: Buffer = NUDGE
  private accepted = true
  private readonly corked = () => {
    this.accepted = (this.response as HttpResponse).write(this.chunk)
  }

  /** `batch` flushes this writer once at the end of the event-loop turn in which it got frames. */
  constructor(maxBufferBytes: number, batch: SseBatch) {
    this.maxBufferBytes = maxBufferBytes
    this.batch = batch
  }

  /** The response, once the stream started. */
  get res(): HttpResponse | undefined {
    return this.response
  }

  get isBlocked(): boolean {
    return this.blocked
  }

  get owed(): number {
    return this.owedBytes
  }

  attach(res: HttpResponse): void {
    this.response = res
  }

  /** The first write, inside the cork that writes the status and headers. */
  open(res: HttpResponse, buf: Buffer): void {
    if (!res.write(buf)) {
      this.blocked = true
      this.owedBytes = buf.length
    }
  }

  /** Queues `buf` for this tick's flush (or behind backpressure); false when the client owes more than `maxBufferBytes` (drop it). */
  write(buf: Buffer): boolean {
    if (this.released) return true
    if (this.blocked) {
      this.queue.push(buf)
      this.owedBytes += buf.length
      return this.owedBytes <= this.maxBufferBytes
    }
    if (this.pending.length === 0) this.batch.add(this)
    this.pending.push(buf)
    return true
  }

  /** Hands the frames of this tick to uWS in one corked write. */
  flush(): void {
    const p = this.pending
    if (p.length === 0 || this.released || this.response === undefined) return
    this.pending = []
    this.chunk = p.length === 1 ? (p[0] as Buffer) : Buffer.concat(p)
    this.response.cork(this.corked)
    this.batch.writes++
    if (!this.accepted) {
      this.blocked = true
      this.owedBytes = this.chunk.length
    }
    this.chunk = NUDGE
  }

  /** uWS onWritable: flushes the queue; once the socket took it all, wakes whoever waits in `writable`. */
  onWritable(res: HttpResponse): boolean {
    if (!this.blocked) return true
    const q = this.queue
    const chunk = q.length === 0 ? NUDGE : q.length === 1 ? (q[0] as Buffer) : Buffer.concat(q)
    this.queue = []
    const ok = res.write(chunk)
    if (ok) {
      this.blocked = false
      this.owedBytes = 0
      this.wake()
    }
    return ok
  }

  /** Resolves once the socket drained (or the stream closed). */
  writable(): Promise<void> {
    return new Promise<void>((resolve) => this.drained.push(resolve))
  }

  /** Every frame not handed to uWS yet, as one buffer (for the final `end`), emptying the writer. */
  takeQueued(): Buffer | undefined {
    const all = this.pending.length === 0 ? this.queue : [...this.pending, ...this.queue]
    this.pending = []
    this.queue = []
    return all.length === 0 ? undefined : all.length === 1 ? all[0] : Buffer.concat(all)
  }

  /** The stream closed: drop every frame (the response may be gone) and release every waiter. */
  release(): void {
    this.released = true
    this.pending = []
    this.queue = []
    this.wake()
  }

  private wake(): void {
    const waiting = this.drained
    this.drained = []
    for (const w of waiting) w()
  }
}

/**
 * The writers that got frames this tick, flushed together from one `setImmediate`: after the poll
 * phase, so every NATS message read in this turn of the event loop (several socket reads, each
 * parsed at once into subscription callbacks) is in before anything is written.
 */
export class SseBatch {
  /** Corked writes of frames, by `flush` and by a stream's final `end` (for `gateway.sseStats()`: writes per event). */
  writes = 0
  private dirty: SseWriter[] = []
  private scheduled = false
  private readonly run = () => {
    this.scheduled = false
    const writers = this.dirty
    this.dirty = []
    for (const w of writers) w.flush()
  }

  add(w: SseWriter): void {
    this.dirty.push(w)
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(this.run)
    }
  }
}
