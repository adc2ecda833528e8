import { useEffect, useRef } from 'react'
import { openEventStream } from '../../api/sse.ts'

/*
 * Execution state changes as they happen (GET /api/v1/events/stream, schema platform.execution.v1):
 * each caller sees its own executions and those of resources it may read. Live only: the stream
 * replays nothing, so pages load what exists first and apply these on top.
 */
export interface ExecutionEvent {
  execution_id: string
  revision: number
  pool: string
  kind: string
  namespace: string
  name: string
  status: string
  attempt: number
  user_id: string | null
  trigger_type: string
  trigger_id: string
  chat_id: string | null
  parent_id: string | null
  error: string | null
  result?: unknown
  created_at: string
  started_at: string | null
  finished_at: string | null
  duration_ms: number | null
}

/** Calls onEvent for every execution event matching filter (`<ns>.<name>.<status>`, `*`, `>`) while mounted. */
export function useExecutionEvents(filter: string, onEvent: (e: ExecutionEvent) => void): void {
  const handler = useRef(onEvent)
  handler.current = onEvent
  useEffect(() => {
    const ac = new AbortController()
    openEventStream(
      `/api/v1/events/stream?filter=${encodeURIComponent(filter)}`,
      (e) => {
        if (e.event === 'execution') handler.current(JSON.parse(e.data) as ExecutionEvent)
      },
      { signal: ac.signal },
    ).catch(() => {
      // the live view is a convenience: without it the lists stay as loaded
    })
    return () => ac.abort()
  }, [filter])
}
