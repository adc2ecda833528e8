import { randomUUID } from 'node:crypto'
import { constants } from 'node:os'
import type { SandboxExit, SandboxProcess } from './driver.ts'

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

/** The sandbox exited; `started` says whether its runner had got ready (was running requests). */
export class SandboxExited extends SandboxBroken {
  readonly exit: SandboxExit
  readonly started: boolean
  constructor(message: string, exit: SandboxExit, started: boolean) {
    super(message)
    this.exit = exit
    this.started = started
  }
}

/**
 * Grace on top of a single-use execution's timeout, counted from the runner's `ready` (the runner
 * reads the request right after it): the runner's own clock starts a moment later than this one.
 */
export const SINGLE_USE_TIMEOUT_GRACE_MS = 100

/** How long an exited sandbox's output may take to drain before waiters fail. */
const EXIT_DRAIN_MS = 2_000

export interface RunnerChannel {
  /** The runner's `ready` frame (pid, python version). */
  readonly ready: Promise<Record<string, unknown>>
  exec(req: ExecRequest): Promise<ExecOutcome>
  /**
   * The one execution of a `--single-use` runner (SandboxSpec.singleUse), which has no supervisor
   * of its own inside the sandbox: the time limit is enforced here (a TimeoutError outcome after
   * `timeoutMs` + SINGLE_USE_TIMEOUT_GRACE_MS from the runner's ready; the caller then destroys
   * the sandbox), and a sandbox that exits before answering is a ProcessDied outcome, as the
   * runner reports them in exclusive mode.
   */
  execOnce(req: ExecRequest): Promise<ExecOutcome>
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
  let started = false
  const readyTimer = setTimeout(
    () => fail(new SandboxBroken(`sandbox ${sb.name} did not start within ${String(readyTimeoutMs)} ms`)),
    readyTimeoutMs,
  )

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
      started = true
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
  // A process's exit can be seen before the last of its output (an answer written just before it
  // exited, as a single-use runner does): the waiters fail only once that output is read.
  const drained = new Promise<void>((resolve) => {
    if (sb.stdout.readableEnded) resolve()
    sb.stdout.once('end', resolve)
    sb.stdout.once('close', resolve)
  })
  let exited: SandboxExited | null = null
  const onExit = async (): Promise<void> => {
    const e = await sb.exited
    // broken at once (nothing new is sent); the waiters fail once the output is read
    exited = new SandboxExited(
      `sandbox ${sb.name} exited (code ${String(e.code)}, signal ${String(e.signal)})`,
      e,
      started,
    )
    let timer: NodeJS.Timeout | undefined
    await Promise.race([drained, new Promise((resolve) => (timer = setTimeout(resolve, EXIT_DRAIN_MS)))])
    clearTimeout(timer)
    fail(exited)
  }
  void onExit()

  function request(body: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>> {
    if (broken !== null) return Promise.reject(broken)
    if (exited !== null) return Promise.reject(exited)
    const id = randomUUID()
    body['id'] = id
    // one buffer: the 4-byte length, then the JSON
    const json = JSON.stringify(body)
    const size = Buffer.byteLength(json, 'utf8')
    const frame = Buffer.allocUnsafe(4 + size)
    frame.writeUInt32BE(size, 0)
    frame.write(json, 4, 'utf8')
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
      sb.stdin.write(frame)
    })
  }

  function outcomeOf(frame: Record<string, unknown>): ExecOutcome {
    const output = typeof frame['output'] === 'string' ? frame['output'] : ''
    const durationMs = typeof frame['duration_ms'] === 'number' ? frame['duration_ms'] : 0
    if (frame['ok'] === true) return { ok: true, result: frame['result'] ?? null, output, durationMs }
    const e = (frame['error'] ?? {}) as Partial<ExecError>
    return {
      ok: false,
      error: {
        type: String(e.type ?? 'Error'),
        message: String(e.message ?? ''),
        traceback: String(e.traceback ?? ''),
      },
      output,
      durationMs,
      timedOut: frame['timed_out'] === true,
    }
  }

  const execBody = (req: ExecRequest): Record<string, unknown> => ({
    op: 'exec',
    code: req.code,
    entrypoint: req.entrypoint,
    input: req.input,
    context: req.context,
    timeout_ms: req.timeoutMs,
    name: req.name ?? '',
  })

  return {
    ready,
    get broken() {
      return broken !== null || exited !== null
    },
    get inflight() {
      return waiters.size
    },
    async exec(req) {
      return outcomeOf(await request(execBody(req), req.timeoutMs + 10_000))
    },
    async execOnce(req) {
      const sent = performance.now()
      let timer: NodeJS.Timeout | undefined
      let settled = false
      const timeLimit = new Promise<ExecOutcome>((resolve) => {
        const arm = async (): Promise<void> => {
          await ready
          if (!settled)
            timer = setTimeout(
              () => resolve(timedOut(req, performance.now() - sent)),
              req.timeoutMs + SINGLE_USE_TIMEOUT_GRACE_MS,
            )
        }
        arm().catch(() => undefined)
      })
      try {
        return await Promise.race([request(execBody(req), req.timeoutMs + 10_000).then(outcomeOf), timeLimit])
      } catch (err) {
        if (err instanceof SandboxExited && err.started) return died(err.exit, performance.now() - sent)
        throw err
      } finally {
        settled = true
        clearTimeout(timer)
      }
    },
    async ping(timeoutMs = 5_000) {
      await request({ op: 'ping' }, timeoutMs)
    },
  }
}

/** What the runner answers for an execution past its time (runner.py main_exclusive). */
function timedOut(req: ExecRequest, durationMs: number): ExecOutcome {
  return {
    ok: false,
    error: {
      type: 'TimeoutError',
      message: `the function ran longer than its timeout of ${String(req.timeoutMs / 1000)} s`,
      traceback: '',
    },
    output: '',
    durationMs,
    timedOut: true,
  }
}

/**
 * What the runner answers for an execution whose process died, from the sandbox's exit: bubblewrap
 * and container inits exit with 128 + the signal's number when their process was killed.
 */
function died(exit: SandboxExit, durationMs: number): ExecOutcome {
  const byName =
    exit.signal === null ? undefined : (constants.signals as Record<string, number | undefined>)[exit.signal]
  const sig = byName ?? (exit.code !== null && exit.code > 128 ? exit.code - 128 : undefined)
  const why =
    sig === constants.signals.SIGXCPU
      ? ' (CPU time limit)'
      : sig === constants.signals.SIGKILL
        ? ' (memory or process limit)'
        : ''
  const how = sig !== undefined ? `was killed by signal ${String(sig)}${why}` : `exited with code ${String(exit.code)}`
  return {
    ok: false,
    error: { type: 'ProcessDied', message: `the function's process ${how} before it returned a result`, traceback: '' },
    output: '',
    durationMs,
    timedOut: false,
  }
}
