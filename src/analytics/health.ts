import { serviceRow, type HealthContribution, type HealthWarning } from '../feature/health.ts'
import type { AnalyticsHealth, AnalyticsWriter } from './writer.ts'

/*
 * The analytics writer's state for health reports: whether rows are being dropped and the last
 * error talking to ClickHouse. One writer per process (the resources role's), set here when
 * it starts; `analyticsHealth()` is what a health endpoint reads.
 */
let current: AnalyticsWriter | undefined

export function setProcessAnalyticsWriter(writer: AnalyticsWriter | undefined): void {
  current = writer
}

/** `{status, dropped, last_error, …}` of this process's writer; `disabled` without ANALYTICS_HOST (or in a process without the resources role). */
export function analyticsHealth(): AnalyticsHealth {
  return current?.health() ?? { status: 'disabled', dropped: 0, last_error: null, buffered: 0, written: 0 }
}

/**
 * The analytics store's row in `GET /api/v1/system/health` (src/feature/health.ts), from the
 * answering process's writer: none without ANALYTICS_HOST; a warning while inserts fail or rows
 * were dropped. Request logs never wait on the store, so a failing one costs logs, not requests.
 */
export async function analyticsHealthContribution(): Promise<HealthContribution> {
  const h = analyticsHealth()
  if (h.status === 'disabled') return {}
  const details = { dropped: h.dropped, buffered: h.buffered, written: h.written, last_error: h.last_error }
  const failing = h.last_error !== null
  const services = [
    serviceRow({
      name: 'analytics',
      kind: 'application',
      status: failing ? 'down' : 'up',
      health: h.status === 'ok' ? 'healthy' : 'degraded',
      ...(failing ? { reason: h.last_error } : {}),
      details,
    }),
  ]
  const warnings: HealthWarning[] = []
  if (failing)
    warnings.push({
      level: 'warning',
      service: 'analytics',
      message: `the analytics store does not take request and execution logs (${String(h.buffered)} rows wait): ${h.last_error ?? ''}`,
      value: h.buffered,
      threshold: 0,
    })
  if (h.dropped > 0)
    warnings.push({
      level: 'warning',
      service: 'analytics',
      message: `${String(h.dropped)} request and execution log rows were dropped since start (the buffer was full or the store refused them)`,
      value: h.dropped,
      threshold: 0,
    })
  return { services, warnings }
}
