import { randomUUID } from 'node:crypto'
import type { SandboxProcess } from './driver.ts'

/*
 * The platform's side of the runner protocol (sandbox/runner/runner.py): frames of a 4-byte
 * big-endian length and UTF-8 JSON, on the sandbox's stdin/stdout. One channel per sandbox; the
 * runner answers each request with its id, so several may be in flight (shared mode).
 */

export interface ExecRequest {
  code: string
  entrypoint: string
  input: unknown
  context: Record<string, unknown>
  timeoutMs: number
  /** For tracebacks only (`<function ns/name>`). */
  name?: string
}

export interface ExecError {
  type: string
  message: string
  traceback: string
}

export type ExecOutcome =
  | { ok: true; result: unknown; output: string; durationMs: number }
  | { ok: false; error: ExecError; output: string; durationMs: number; timedOut: boolean }

interface Waiter {
  resolve(frame: Record<string, unknown>): void
  reject(err: Error): void
}

/** The sandbox went away or broke the protocol: the sandbox is unusable and must be destroyed. */
export class SandboxBroken extends Error {
  override readonly name = 'SandboxBroken'
}

export interface RunnerChannel {
  /** The runner's `ready` frame (pid, python version). */
  readonly ready: Promise<Record<string, unknown>>
  exec(req: ExecRequest): Promise<ExecOutcome>
  ping(timeoutMs?: number): Promise<void>
  /** Whether the sandbox has exited or broken the protocol. */
  readonly broken: boolean
  /** Requests in flight. */
  readonly inflight: number
}

const MAX_FRAME = 32 * 1024 * 1024

export function openChannel(sb: SandboxProcess, readyTimeoutMs = 30_000): RunnerChannel {
  const waiters = new Map<string, Waiter>()
  let broken: Error | null = null
  let buf: Buffer = Buffer.alloc(0)
  let readyResolve!: (f: Record<string, unknown>) => void
  let readyReject!: (e: Error) => void
  const ready = new Promise<Record<string, unknown>>((res, rej) => {
    readyResolve = res
    readyReject = rej
  })
  // a never-awaited ready rejection must not crash the process
  ready.catch(() => undefined)
  const readyTimer = setTimeout(() => fail(new SandboxBroken(`sandbox ${sb.name} did not start within ${String(readyTimeoutMs)} ms`)), readyTimeoutMs)

  function fail(err: Error): void {
    if (broken !== null) return
    broken = err
    clearTimeout(readyTimer)
    readyReject(err)
    for (const w of waiters.values()) w.reject(err)
    waiters.clear()
  }

  function onFrame(frame: Record<string, unknown>): void {
    if (frame['op'] === 'ready') {
      clearTimeout(readyTimer)
      readyResolve(frame)
      return
    }
    const id = typeof frame['id'] === 'string' ? frame['id'] : ''
    const w = waiters.get(id)
    if (w === undefined) {
      // An answer nobody asked for means the stream cannot be trusted any more.
      fail(new SandboxBroken(`sandbox ${sb.name} sent an unexpected frame`))
      return
    }
    waiters.delete(id)
    w.resolve(frame)
  }

  sb.stdout.on('data', (chunk: Buffer) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
    while (buf.length >= 4) {
      const n = buf.readUInt32BE(0)
      if (n > MAX_FRAME) {
        fail(new SandboxBroken(`sandbox ${sb.name} sent a frame of ${String(n)} bytes`))
        return
      }
      if (buf.length < 4 + n) break
      let frame: Record<string, unknown>
      try {
        frame = JSON.parse(buf.subarray(4, 4 + n).toString('utf8')) as Record<string, unknown>
      } catch {
        fail(new SandboxBroken(`sandbox ${sb.name} sent malformed JSON`))
        return
      }
      buf = buf.subarray(4 + n)
      onFrame(frame)
    }
  })
  sb.stdout.on('error', (err) => fail(new SandboxBroken(`sandbox ${sb.name}: ${err.message}`)))
  sb.stdin.on('error', (err) => fail(new SandboxBroken(`sandbox ${sb.name}: ${err.message}`)))
  void sb.exited.then((e) => fail(new SandboxBroken(`sandbox ${sb.name} exited (code ${String(e.code)}, signal ${String(e.signal)})`)))

  function request(body: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>> {
    if (broken !== null) return Promise.reject(broken)
    const id = randomUUID()
    const payload = Buffer.from(JSON.stringify({ ...body, id }), 'utf8')
    const head = Buffer.allocUnsafe(4)
    head.writeUInt32BE(payload.length, 0)
    return new Promise((resolve, reject) => {
      // The runner enforces the function's timeout itself; this one only catches a hung runner.
      const timer = setTimeout(() => {
        waiters.delete(id)
        const err = new SandboxBroken(`sandbox ${sb.name} did not answer within ${String(timeoutMs)} ms`)
        fail(err)
        reject(err)
      }, timeoutMs)
      waiters.set(id, {
        resolve: (f) => {
          clearTimeout(timer)
          resolve(f)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      })
      sb.stdin.write(Buffer.concat([head, payload]))
    })
  }

  return {
    ready,
    get broken() {
      return broken !== null
    },
    get inflight() {
      return waiters.size
    },
    async exec(req) {
      const frame = await request(
        { op: 'exec', code: req.code, entrypoint: req.entrypoint, input: req.input, context: req.context, timeout_ms: req.timeoutMs, name: req.name ?? '' },
        req.timeoutMs + 10_000,
      )
      const output = typeof frame['output'] === 'string' ? frame['output'] : ''
      const durationMs = typeof frame['duration_ms'] === 'number' ? frame['duration_ms'] : 0
      if (frame['ok'] === true) return { ok: true, result: frame['result'] ?? null, output, durationMs }
      const e = (frame['error'] ?? {}) as Partial<ExecError>
      return {
        ok: false,
        error: { type: String(e.type ?? 'Error'), message: String(e.message ?? ''), traceback: String(e.traceback ?? '') },
        output,
        durationMs,
        timedOut: frame['timed_out'] === true,
      }
    },
    async ping(timeoutMs = 5_000) {
      await request({ op: 'ping' }, timeoutMs)
    },
  }
}
