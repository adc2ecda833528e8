import { notFound } from '../kernel/errors.ts'
import { can, type Principal } from './principal.ts'

/**
 * The lookup of a row that belongs to its owner and is named per owner (schedules, database
 * triggers): the caller's own by name, or another owner's (`owner_id`) with the `all` permission.
 * A row the caller may not read answers the same 404 (`code`) as one that does not exist.
 */
export function ownedByName<T>(
  byName: (owner: string, name: string) => Promise<T | null>,
  what: string,
  code: string,
): (p: Principal, name: string, ownerId: string | undefined, own: string, all: string) => Promise<T> {
  return async (p, name, ownerId, own, all) => {
    const owner = ownerId ?? p.userId
    const allowed = owner === p.userId ? can(p, own) || can(p, all) : can(p, all)
    const row = allowed ? await byName(owner, name) : null
    if (row === null) throw notFound(`${what} ${name} not found`, code)
    return row
  }
}
