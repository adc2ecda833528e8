import type { NatsLinkState } from './nats-status.ts'

/*
 * GET /health. `{status, nats, version}` as before, plus what the process knows about its other
 * dependencies (Postgres, the workers' heartbeats), each a snapshot a background probe keeps fresh
 * so the route never waits on I/O. `status` is `ok`, `degraded` (a dependency is down) or `down`
 * (no NATS: nothing can be served); anything but `ok` answers 503 with the same body, which is
 * what load balancers and process managers act on.
 */
export interface HealthComponent {
  ok: boolean
  /** What the body shows under the component's name. */
  value: unknown
}

export type HealthComponents = () => Record<string, HealthComponent>

export function healthReport(
  nats: NatsLinkState,
  version: string,
  components: Record<string, HealthComponent> = {},
): { code: number; body: Record<string, unknown> } {
  const parts = Object.entries(components)
  const status = nats !== 'connected' ? 'down' : parts.every(([, c]) => c.ok) ? 'ok' : 'degraded'
  const body: Record<string, unknown> = { status, nats, version }
  for (const [name, c] of parts) body[name] = c.value
  return { code: status === 'ok' ? 200 : 503, body }
}
