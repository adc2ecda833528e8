import type { GroupRule, Layer } from './layers.config.ts'

/*
 * The checks on the graph of groups, apart from reading files so that a test can give them a small
 * graph of its own: the layer of each group, the edges to a higher layer, and the cycles between
 * groups (Tarjan's strongly connected components, then one cycle walked through each).
 */

/** One import from a file of one group to a file of another. */
export interface Edge {
  readonly from: string
  readonly to: string
  /** `file:line` of the import. */
  readonly where: string
  readonly text: string
}

/** The group of a file (path relative to the repository root, `/` separators), or undefined. */
export function groupOf(path: string, rules: readonly GroupRule[]): string | undefined {
  for (const rule of rules) {
    const m = rule.pattern.exec(path)
    if (m) return rule.group.replace(/\$(\d)/g, (_, k: string) => m[Number(k)] ?? '')
  }
  return undefined
}

/** The index (0 = lowest) of every group's layer. */
export function layerIndex(layers: readonly Layer[]): Map<string, number> {
  const index = new Map<string, number>()
  layers.forEach((layer, i) => {
    for (const g of layer.groups) index.set(g, i)
  })
  return index
}

/** The groups found in the code that no layer lists. */
export function unlistedGroups(groups: Iterable<string>, layers: readonly Layer[]): string[] {
  const index = layerIndex(layers)
  return [...new Set(groups)].filter((g) => !index.has(g)).sort()
}

/** Each edge from a group to a group of a higher layer, as a message. */
export function upwardEdges(edges: readonly Edge[], layers: readonly Layer[]): string[] {
  const index = layerIndex(layers)
  const out: string[] = []
  for (const e of edges) {
    const from = index.get(e.from)
    const to = index.get(e.to)
    if (from === undefined || to === undefined || to <= from) continue
    out.push(`${e.where}: ${e.from} (${layers[from]!.name}) imports ${e.to} (${layers[to]!.name}, higher): ${e.text}`)
  }
  return out
}

/** The strongly connected components of more than one group (Tarjan). */
export function cyclicComponents(edges: readonly Edge[]): string[][] {
  const next = adjacency(edges)
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  let counter = 0
  const visit = (v: string): void => {
    index.set(v, counter)
    low.set(v, counter)
    counter++
    stack.push(v)
    onStack.add(v)
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1) components.push(component.sort())
    }
  }
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v)
  return components
}

/**
 * One cycle through a component, as lines: each step `a -> b` with one import that makes it. The
 * shortest way back to the component's first group (breadth-first, inside the component).
 */
export function describeCycle(component: readonly string[], edges: readonly Edge[]): string[] {
  const inside = new Set(component)
  const example = new Map<string, Edge>()
  for (const e of edges) {
    if (inside.has(e.from) && inside.has(e.to) && e.from !== e.to && !example.has(`${e.from}\0${e.to}`)) {
      example.set(`${e.from}\0${e.to}`, e)
    }
  }
  const next = adjacency([...example.values()])
  const start = component[0]!
  const previous = new Map<string, string>()
  const queue = [start]
  let last: string | undefined
  while (queue.length > 0 && last === undefined) {
    const v = queue.shift()!
    for (const w of next.get(v) ?? []) {
      if (w === start) {
        last = v
        break
      }
      if (!previous.has(w)) {
        previous.set(w, v)
        queue.push(w)
      }
    }
  }
  if (last === undefined) return [`${component.join(', ')} (no cycle found back to ${start})`]
  const path = [last]
  while (path[0] !== start) path.unshift(previous.get(path[0]!)!)
  path.push(start)
  const lines: string[] = []
  for (let i = 0; i + 1 < path.length; i++) {
    const e = example.get(`${path[i]}\0${path[i + 1]}`)!
    lines.push(`${e.from} -> ${e.to}   ${e.where}: ${e.text}`)
  }
  return lines
}

function adjacency(edges: readonly Edge[]): Map<string, Set<string>> {
  const next = new Map<string, Set<string>>()
  for (const e of edges) {
    if (e.from === e.to) continue
    if (!next.has(e.from)) next.set(e.from, new Set())
    if (!next.has(e.to)) next.set(e.to, new Set())
    next.get(e.from)!.add(e.to)
  }
  return next
}
