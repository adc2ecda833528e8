import { Kvm, type KV } from '@nats-io/kv'
import type { Static } from '@sinclair/typebox'
import { JOB_STATUSES, JobError, type JobState, type POOLS } from '../../schemas/job.ts'
import { errorCodeInfo } from '../kernel/error-codes.ts'
import { isCasConflict } from '../kernel/nats-errors.ts'
import { ackedPublisher, kvCasWriter } from '../platform/acked-publish.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'

/*
 * The live state of a job: one entry per job id in the JOB_STATE bucket (history 1, TTL = results
 * retention). It is the authority for transitions: every change is a CAS on the
 * entry's revision and terminal states are absorbing, so two workers, a cancel and a flush can race
 * and exactly one wins. The bucket republishes each write to `evt.job.<id>`: that subject is the
 * job's done channel.
 */
export { JOB_STATUSES, POOLS } from '../../schemas/job.ts'
export type Pool = (typeof POOLS)[number]
export type JobStatus = (typeof JOB_STATUSES)[number]
export const TERMINAL: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'cancelled'])
export const isTerminal = (s: JobStatus): boolean => TERMINAL.has(s)

/** The entry's shape lives in schemas/job.ts. */
export type { JobState }

export type JobError = Static<typeof JobError>

/** What an executor throws to fail a job with a registered code (and, for functions, the Python exception type). */
export class JobFailure extends Error {
  override name = 'JobFailure'
  readonly code: string
  readonly type: string
  constructor(code: string, message: string, type = '') {
    super(message)
    if (errorCodeInfo(code) === undefined)
      throw new Error(`unregistered error code ${code}: add it to src/kernel/error-codes.ts`)
    this.code = code
    this.type = type
  }
}

export const jobError = (code: string, message: string, type = ''): JobError =>
  toJobError(new JobFailure(code, message, type))

/** Anything a job threw, as the state records it. Errors with a registered `code` (AppError, TurnError) keep it. */
export function toJobError(err: unknown): JobError {
  if (err instanceof JobFailure) return { code: err.code, type: err.type, message: err.message }
  const code = (err as { code?: unknown } | null)?.code
  const message = err instanceof Error ? err.message : String(err)
  return {
    code: typeof code === 'string' && errorCodeInfo(code) !== undefined ? code : 'job.failed',
    type: '',
    message,
  }
}

/** Reads a state's error, old string-shaped entries included (they carry no code: `job.failed`). */
export function jobErrorOf(e: JobState['error'] | undefined): JobError | null {
  if (e === null || e === undefined) return null
  return typeof e === 'string' ? { code: 'job.failed', type: '', message: e } : e
}

/** The text the API, the executions table and the events show: `Type: message`, or the message. */
export function jobErrorText(e: JobState['error'] | undefined): string | null {
  const j = jobErrorOf(e)
  return j === null ? null : j.type === '' ? j.message : `${j.type}: ${j.message}`
}

export interface StateEntry {
  state: JobState
  revision: number
}

/** Results above this size stay out of the bucket (NATS max_payload is 1 MB). */
export const INLINE_RESULT_MAX_BYTES = 64 * 1024

const decoder = new TextDecoder()
const encoder = new TextEncoder()

export const decodeState = (data: Uint8Array): JobState => JSON.parse(decoder.decode(data)) as JobState
export const encodeState = (s: JobState): Uint8Array => encoder.encode(JSON.stringify(s))

export interface JobStateStore {
  kv: KV
  get(id: string): Promise<StateEntry | null>
  /** Creates the entry; null when it already exists (idempotent enqueue). */
  create(state: JobState): Promise<number | null>
  /**
   * CAS loop: reads, applies `change` (null = refuse), writes with the read revision; retries on a
   * lost race. Returns the written entry, or null when `change` refused or the job is unknown.
   */
  transition(id: string, change: (cur: JobState) => JobState | null, known?: StateEntry): Promise<StateEntry | null>
}

export async function openJobStateStore(nc: NatsConnection, names: NatsNames): Promise<JobStateStore> {
  const bucket = names.bucket('JOB_STATE')
  const kv = await new Kvm(nc).open(bucket)
  // Writes are CAS publishes on the key's subject through the connection's lean publisher: what
  // kv.create / kv.update send, without their per-call request machinery (acked-publish.ts). No
  // job state is ever deleted, so "nothing stored on the key" is what a create expects.
  const casWrite = kvCasWriter(ackedPublisher(nc), bucket)
  const write = (id: string, state: JobState, expected: number): Promise<number> =>
    casWrite(id, encodeState(state), expected)
  const get = async (id: string): Promise<StateEntry | null> => {
    const e = await throughOutages(() => kv.get(id))
    if (e === null || e.operation !== 'PUT' || e.length === 0) return null
    return { state: decodeState(e.value), revision: e.revision }
  }
  return {
    kv,
    get,
    async create(state) {
      // Retried through a NATS restart: if an earlier try was stored but its answer lost, the
      // retry meets the existing key and reports it like any duplicate.
      try {
        return await throughOutages(() => write(state.id, state, 0))
      } catch (err) {
        if (isWrongLastSequence(err)) return null
        throw err
      }
    },
    async transition(id, change, known) {
      let cur = known ?? (await get(id))
      for (let i = 0; i < 50 && cur !== null; i++) {
        const next = change(cur.state)
        if (next === null) return null
        try {
          const rev = cur.revision
          const revision = await throughOutages(() => write(id, next, rev))
          return { state: next, revision }
        } catch (err) {
          if (!isWrongLastSequence(err)) throw err
          cur = await get(id)
        }
      }
      return null
    },
  }
}

/**
 * Retries an operation while NATS is unreachable (a restart takes a second or two), up to
 * `budgetMs`. A CAS conflict is an answer, not an outage, and is passed through at once. A write
 * that timed out may have been stored: the retry then meets a CAS conflict, and the callers
 * re-read and judge the state they find — which is why every transition is a pure function of it.
 */
export async function throughOutages<T>(op: () => Promise<T>, budgetMs = 20_000): Promise<T> {
  const deadline = Date.now() + budgetMs
  for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
    try {
      return await op()
    } catch (err) {
      if (isWrongLastSequence(err) || Date.now() + delay > deadline) throw err
      await new Promise((r) => setTimeout(r, delay))
    }
  }
}

/** The server's answer to a CAS with a stale revision (`wrong last sequence`, err_code 10071). */
export const isWrongLastSequence = isCasConflict
