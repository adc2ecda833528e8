import pg from 'pg'
import { JobFailure } from '../../src/jobs/job-state.ts'
import type { JobExecutor } from '../../src/jobs/worker.ts'

/*
 * Executors for the job tests, driven by the job input: `{op, ...}`. `effect` records that the job
 * ran to completion in Postgres (table test_effects in the test database), which is how the
 * failure tests prove an effect was neither lost nor applied twice. With `gated`, the run first
 * records that it started (test_gates.started) and writes its effect only once the test has
 * released it (test_gates.released): a test kills a worker between the two on that event instead
 * of racing a sleep.
 */
export interface TestInput {
  op: 'echo' | 'sleep' | 'fail' | 'fail-typed' | 'fail-times' | 'effect' | 'crash-once' | 'big'
  value?: unknown
  ms?: number
  times?: number
  /** `effect` only: announce the start, then wait for the test's release before the effect. */
  gated?: boolean
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export function testExecutor(databaseUrl?: string): JobExecutor {
  const pool = databaseUrl === undefined ? null : new pg.Pool({ connectionString: databaseUrl, max: 4 })
  // The test database is dropped with force at teardown; idle clients then error, harmlessly.
  pool?.on('error', () => undefined)
  return async ({ job, attempt, signal }) => {
    const input = job.input as TestInput
    switch (input.op) {
      case 'echo':
        return { value: input.value ?? null, attempt }
      case 'sleep':
        await sleep(input.ms ?? 100)
        return { slept: input.ms ?? 100 }
      case 'fail':
        throw new Error('poisoned input')
      case 'fail-typed':
        throw new JobFailure('function.error', 'bad value', 'ValueError')
      case 'fail-times':
        if (attempt <= (input.times ?? 1)) throw new Error(`failing attempt ${String(attempt)}`)
        return { attempt }
      case 'crash-once':
        if (attempt === 1) process.kill(process.pid, 'SIGKILL')
        return { attempt }
      case 'big':
        return { text: 'x'.repeat(100_000) }
      case 'effect': {
        await sleep(input.ms ?? 0)
        if (pool === null) throw new Error('effect needs a database')
        if (input.gated === true) await gate(pool, job.id, signal)
        await pool.query(
          'insert into test_effects (job_id, runs) values ($1, 1) on conflict (job_id) do update set runs = test_effects.runs + 1',
          [job.id],
        )
        return { done: true }
      }
    }
  }
}

/** Records the start, then polls until the test releases the job (or the run is aborted). */
async function gate(pool: pg.Pool, jobId: string, signal: AbortSignal): Promise<void> {
  await pool.query(
    'insert into test_gates (job_id, started) values ($1, 1) on conflict (job_id) do update set started = test_gates.started + 1',
    [jobId],
  )
  for (;;) {
    signal.throwIfAborted()
    const { rows } = await pool.query<{ released: boolean }>('select released from test_gates where job_id = $1', [
      jobId,
    ])
    if (rows[0]?.released === true) return
    await sleep(20)
  }
}

export const GATES_TABLE =
  'create table if not exists test_gates (job_id uuid primary key, started integer not null, released boolean not null default false)'
export const EFFECTS_TABLE = 'create table if not exists test_effects (job_id uuid primary key, runs integer not null)'
