import { can, type Principal } from '../auth/principal.ts'
import type { ExecutionEvent } from '../../schemas/job.ts'
import { JOB_PERMISSIONS } from '../jobs/service.ts'
import type { ResourceService } from '../resources/service.ts'

/*
 * Which execution events a caller may see: every one with `platform.queue.read:all` (what lists
 * every execution), its own executions, and those of a resource it may read (a function it may
 * read: its runs by anyone). The resource check goes through the engine's `get` (the same answer
 * as `GET /api/v1/<kind>/{ns}/{name}`), remembered per stream for a few seconds: a busy function
 * emits several events per run.
 */

/** What lists every execution (the jobs' own permission; declared by the jobs feature). */
export const READ_ALL_EXECUTIONS = JOB_PERMISSIONS.readAll
const REMEMBER_MS = 10_000

export interface Visibility {
  visible(p: Principal, e: ExecutionEvent): Promise<boolean>
}

export function eventVisibility(resources: ResourceService): Visibility {
  const seen = new Map<string, { ok: boolean; at: number }>()
  return {
    async visible(p, e) {
      if (can(p, READ_ALL_EXECUTIONS)) return true
      if (e.user_id !== null && e.user_id === p.userId) return true
      const kind = resources.kinds.get(e.kind)
      if (kind === undefined) return false
      const key = `${e.kind}\u0000${e.namespace}\u0000${e.name}`
      const hit = seen.get(key)
      if (hit !== undefined && Date.now() - hit.at < REMEMBER_MS) return hit.ok
      const ok = await resources.get(p, kind, { namespace: e.namespace, name: e.name }).then(
        () => true,
        () => false,
      )
      if (seen.size > 1_000) seen.clear()
      seen.set(key, { ok, at: Date.now() })
      return ok
    },
  }
}
