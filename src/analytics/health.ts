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
