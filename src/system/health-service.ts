import type { HealthService } from '../../schemas/system.ts'
import { serviceRow } from '../feature/health.ts'

/*
 * What the health probes share: the row of a probe that failed, a probe bounded in time.
 */

/** The row of a service whose probe failed or did not answer in time. */
export const unknownService = (name: string, kind: HealthService['kind'], reason: string): HealthService =>
  serviceRow({ name, kind, status: 'unknown', health: 'unknown', reason })

export class ProbeTimeout extends Error {}

/**
 * `work` or a ProbeTimeout after `ms`: a probe that cannot answer (a server gone, a connection
 * pool waiting for a connection) must not hold the endpoint. Its work keeps running in the
 * background and is dropped when it ends.
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ProbeTimeout(`${what}: no answer within ${String(ms)} ms`)), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

export const reasonOf = (err: unknown): string => (err instanceof Error ? err.message : String(err))
