/*
 * The runs started from this browser, per function, with what only the execute answer carries
 * (`output`: what the function printed, which the execution records of GET /executions do not
 * hold). localStorage, the newest 50 per function.
 */
export interface RunRecord {
  execution_id: string
  at: string
  status: string
  input: unknown
  result: unknown
  error: string | null
  output?: string
  duration_ms?: number
  /** How it was started, when the queue says (api, schedule, agent, …). */
  trigger?: string
}

const MAX = 50
const keyOf = (fn: string) => `console.runs.${fn}`

export function readRuns(fn: string): RunRecord[] {
  try {
    const raw = localStorage.getItem(keyOf(fn))
    return raw === null ? [] : (JSON.parse(raw) as RunRecord[])
  } catch {
    return []
  }
}

export function addRun(fn: string, run: RunRecord): RunRecord[] {
  const runs = [run, ...readRuns(fn).filter((r) => r.execution_id !== run.execution_id)].slice(0, MAX)
  try {
    localStorage.setItem(keyOf(fn), JSON.stringify(runs))
  } catch {
    // storage full: the run stays on the page until it is left
  }
  return runs
}
