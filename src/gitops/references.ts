import type { DocumentResource } from './document-resources.ts'
import { formatPath, parsePath, type PathSegment } from './document-path.ts'
import type { DocumentIssue, ParsedDocument } from './parse-document.ts'

export interface Reference {
  kind: string
  ref: string
}

export interface ReferenceCheck {
  /** What a resource refers to: each kind's `refs` (src/resources/kind.ts), given the resource's body with its defaults. */
  refs: (kind: string, body: Record<string, unknown>) => readonly Reference[]
  /** Whether the platform already has it (a reference to something outside the document). */
  exists: (kind: string, ref: string) => boolean
  /** For line and column in the issues. */
  doc?: ParsedDocument
}

export interface ResolvedReferences {
  /** Every resource, those referred to before those referring to them; the members of a cycle last, in document order. */
  ordered: DocumentResource[]
  /** References to nothing: `{path, message}` naming both ends. */
  dangling: DocumentIssue[]
  /** One issue per cycle, naming its members in order. */
  cycles: DocumentIssue[]
}

const name = (r: { kind: string; key: string }) => `${r.kind} ${r.key}`

/**
 * The references between the resources of a document: dangling ones (neither in the document nor
 * on the platform) are reported, and the resources are ordered so that what is referred to is
 * applied first (a stable topological order: document order wherever references allow). A wildcard
 * (`tools/*`, `*\/*`) never dangles and orders after every resource of the document it matches. A
 * cycle is reported, not refused here: two agents delegating to each other are a cycle the caller
 * may accept by creating both before either is checked.
 */
export function resolveReferences(resources: readonly DocumentResource[], check: ReferenceCheck): ResolvedReferences {
  const issueAt = (path: string, message: string): DocumentIssue =>
    check.doc === undefined ? { path, message } : check.doc.issueAt(path, message)
  const byKey = new Map(resources.map((r, i) => [`${r.kind} ${r.key}`, i]))
  // dependsOn[i]: the resources i refers to; users[j]: the resources referring to j
  const dependsOn = resources.map(() => new Set<number>())
  const users = resources.map(() => new Set<number>())
  const dangling: DocumentIssue[] = []
  resources.forEach((r, i) => {
    for (const { kind, ref } of check.refs(r.kind, r.body)) {
      const targets = ref.endsWith('/*')
        ? resources.flatMap((o, j) =>
            o.kind === kind && (ref === '*/*' || o.key.startsWith(ref.slice(0, -1))) ? [j] : [],
          )
        : [byKey.get(`${kind} ${ref}`)].filter((j): j is number => j !== undefined)
      if (targets.length === 0 && !ref.endsWith('/*') && !check.exists(kind, ref)) {
        const field = fieldHolding(r.body, ref)
        dangling.push(
          issueAt(
            field === undefined ? r.path : formatPath([...parsePath(r.path), ...field]),
            `${name(r)} refers to ${kind} ${ref}, which is neither in the document nor on the platform`,
          ),
        )
      }
      for (const j of targets) {
        if (j === i) continue
        dependsOn[i]?.add(j)
        users[j]?.add(i)
      }
    }
  })
  const waiting = dependsOn.map((d) => d.size)
  const ready = waiting.flatMap((n, i) => (n === 0 ? [i] : []))
  const ordered: number[] = []
  while (ready.length > 0) {
    // the lowest index first: document order wherever the references leave a choice
    const i = ready.shift() as number
    ordered.push(i)
    for (const u of users[i] ?? []) {
      waiting[u] = (waiting[u] ?? 0) - 1
      if (waiting[u] === 0) insertSorted(ready, u)
    }
  }
  const left = waiting.flatMap((n, i) => (n > 0 ? [i] : []))
  return {
    ordered: [...ordered, ...left].map((i) => resources[i] as DocumentResource),
    dangling,
    cycles: findCycles(left, dependsOn).map((cycle) =>
      issueAt(
        (resources[cycle[0] as number] as DocumentResource).path,
        `the resources refer to each other in a cycle: ${[...cycle, cycle[0] as number].map((i) => name(resources[i] as DocumentResource)).join(' → ')}`,
      ),
    ),
  }
}

function insertSorted(list: number[], n: number): void {
  let lo = 0
  let hi = list.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if ((list[mid] as number) < n) lo = mid + 1
    else hi = mid
  }
  list.splice(lo, 0, n)
}

/** The cycles among resources left unordered: each of them still depends on another one left, so following those edges must come back. */
function findCycles(left: readonly number[], dependsOn: readonly Set<number>[]): number[][] {
  const remaining = new Set(left)
  const done = new Set<number>()
  const cycles: number[][] = []
  for (const start of left) {
    if (done.has(start)) continue
    const path: number[] = []
    const onPath = new Map<number, number>()
    let at: number | undefined = start
    while (at !== undefined && !done.has(at) && !onPath.has(at)) {
      onPath.set(at, path.length)
      path.push(at)
      at = [...(dependsOn[at] ?? [])].filter((d) => remaining.has(d)).sort((a, b) => a - b)[0]
    }
    if (at !== undefined && onPath.has(at)) cycles.push(path.slice(onPath.get(at)))
    for (const p of path) done.add(p)
  }
  return cycles
}

/** Where in a body a reference is written (the first string equal to it), for an issue that points at the field. */
function fieldHolding(body: unknown, ref: string): PathSegment[] | undefined {
  const stack: { value: unknown; path: PathSegment[] }[] = [{ value: body, path: [] }]
  for (let top = stack.shift(); top !== undefined; top = stack.shift()) {
    const { value, path } = top
    if (value === ref) return path
    if (Array.isArray(value)) value.forEach((v, i) => stack.push({ value: v, path: [...path, i] }))
    else if (value !== null && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) stack.push({ value: v, path: [...path, k] })
  }
  return undefined
}
