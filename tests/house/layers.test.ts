import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import t from 'tap'
import { relativeImports, stripComments } from './import-scan.ts'
import { cyclicComponents, describeCycle, groupOf, unlistedGroups, upwardEdges, type Edge } from './layer-graph.ts'
import { GROUP_RULES, LAYERS, NOT_SCANNED, SCANNED_DIRS, SCANNED_EXTENSIONS, type Layer } from './layers.config.ts'

/*
 * The layers of the code (tests/house/layers.config.ts) held by a scan of every relative import of
 * the process code. Written here rather than with dependency-cruiser: that needs Node 22 and the
 * platform runs on Node 20.
 */
const ROOT = join(import.meta.dirname, '..', '..')

function files(dir: string): string[] {
  const out: string[] = []
  let entries
  try {
    entries = readdirSync(join(ROOT, dir), { withFileTypes: true })
  } catch {
    return out
  }
  for (const e of entries) {
    const path = `${dir}/${e.name}`
    if (Object.keys(NOT_SCANNED).some((prefix) => `${path}/`.startsWith(prefix))) continue
    if (e.isDirectory()) out.push(...files(path))
    else if (SCANNED_EXTENSIONS.some((ext) => e.name.endsWith(ext)) && !e.name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

interface Scan {
  readonly edges: Edge[]
  readonly groups: Set<string>
  readonly ungrouped: string[]
  readonly imports: number
}

function scan(): Scan {
  const edges: Edge[] = []
  const groups = new Set<string>()
  const ungrouped: string[] = []
  let imports = 0
  for (const file of SCANNED_DIRS.flatMap(files)) {
    const from = groupOf(file, GROUP_RULES)
    if (from === undefined) {
      ungrouped.push(file)
      continue
    }
    groups.add(from)
    const code = stripComments(readFileSync(join(ROOT, file), 'utf8'))
    for (const site of relativeImports(code)) {
      imports++
      const target = relative(ROOT, resolve(ROOT, dirname(file), site.specifier))
        .split(sep)
        .join('/')
      const to = groupOf(target, GROUP_RULES)
      if (to === undefined || to === from) continue
      groups.add(to)
      edges.push({ from, to, where: `${file}:${site.line}`, text: site.text })
    }
  }
  return { edges, groups, ungrouped, imports }
}

const found = scan()

t.test('every file and every group has its place in a layer', async (t) => {
  t.same(found.ungrouped, [], 'files no rule of GROUP_RULES maps to a group')
  const unlisted = unlistedGroups(found.groups, LAYERS)
  t.same(
    unlisted,
    [],
    unlisted.length > 0
      ? `groups in no layer: put the new folder in a layer in tests/house/layers.config.ts (${unlisted.join(', ')})`
      : 'every group is in a layer',
  )
})

t.test('no import reaches a higher layer', async (t) => {
  t.ok(found.edges.length > 250, `the scan found ${found.edges.length} imports between groups (more than 250)`)
  const up = upwardEdges(found.edges, LAYERS)
  // one failure per import, so that each shows as its own line
  for (const message of up) t.fail(message)
  if (up.length === 0) t.pass('every import is of its own layer or a lower one')
})

t.test('no cycle between groups', async (t) => {
  const components = cyclicComponents(found.edges)
  // one failure per cycle; its steps (each with one import that makes it) in the diagnostic
  for (const c of components) {
    const steps = describeCycle(c, found.edges)
    t.fail(`cycle among ${c.join(', ')}: ${steps.length} steps: ${steps.join(' | ')}`, { steps })
  }
  if (components.length === 0) t.pass('the groups make no cycle')
})

t.test('the checker finds what it must (an in-memory graph)', async (t) => {
  const layers: Layer[] = [
    { name: 'low', about: '', groups: ['a'] },
    { name: 'mid', about: '', groups: ['b', 'c'] },
    { name: 'high', about: '', groups: ['d'] },
  ]
  const edge = (from: string, to: string): Edge => ({ from, to, where: `${from}.ts:1`, text: `import '../${to}'` })
  // d -> b -> c -> b is a cycle inside a layer; a -> d is a back edge (low imports high); c -> a is fine
  const edges = [edge('d', 'b'), edge('b', 'c'), edge('c', 'b'), edge('c', 'a'), edge('a', 'd')]
  t.same(upwardEdges(edges, layers), ["a.ts:1: a (low) imports d (high, higher): import '../d'"])
  // a -> d -> b -> c -> a closes a cycle too: one component of four
  t.same(cyclicComponents(edges), [['a', 'b', 'c', 'd']])
  const steps = describeCycle(['a', 'b', 'c', 'd'], edges)
  t.same(
    steps.map((s) => s.split(' ')[0] + '>' + s.split(' ')[2]),
    ['a>d', 'd>b', 'b>c', 'c>a'],
    'each step of the cycle with its import',
  )
  t.same(cyclicComponents([edge('a', 'b'), edge('b', 'c')]), [], 'no cycle in a chain')
  t.same(unlistedGroups(['a', 'e'], layers), ['e'])

  // the import forms, comments removed first
  const code = stripComments(
    [
      "import a from './a.ts'",
      "import type { B } from '../b.ts'",
      'import {',
      '  c,',
      '  d,',
      "} from './cd.ts'",
      "export { e } from './e.ts'",
      "export * from './f.ts'",
      "import './g.ts'",
      "const h = await import('./h.ts')",
      "// import z from './commented.ts'",
      "/* import y from './block.ts' */",
      "const s = '//' + `${'/*'}` // import x from './x.ts'",
      "const r = /\\/\\*/ ; import i from './i.ts'",
      "import l from 'node:fs'",
    ].join('\n'),
  )
  t.same(
    relativeImports(code).map((s) => `${s.line} ${s.specifier}`),
    ['1 ./a.ts', '2 ../b.ts', '3 ./cd.ts', '7 ./e.ts', '8 ./f.ts', '9 ./g.ts', '10 ./h.ts', '14 ./i.ts'],
  )
})
