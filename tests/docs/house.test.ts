import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import t from 'tap'

/*
 * The documentation stands on its own: the README stays a short front page, nothing points at a
 * document that is not in the repository, every folder says what lives in it and what it may
 * import, and every page of docs/ can be found from its index.
 */
const ROOT = resolve(import.meta.dirname, '../..')
const SKIP = new Set([
  'node_modules',
  '.git',
  '.tap',
  '.data',
  '.scratch',
  'dist',
  'coverage',
  '__pycache__',
  'results',
])

function walk(dir: string, visit: (path: string, isDir: boolean) => void): void {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue
    const path = join(dir, name)
    const isDir = statSync(path).isDirectory()
    visit(path, isDir)
    if (isDir) walk(path, visit)
  }
}

t.test('README.md is a front page of at most 400 lines', async (t) => {
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length
  t.ok(lines <= 400, `README.md has ${lines} lines`)
})

/** The names of documents that are not in the repository; built here so this file does not match itself. */
const OUTSIDE = ['SPEC', 'WIRE', 'DESIGN'].flatMap((n) => [`${n}.md`, `${n} §`, `${n}.md §`])
const CHECKED = /\.(md|ts|tsx|js|mjs|cjs|json|sh|py|sql|yaml|yml|conf)$/

t.test('no file cites a document outside the repository', async (t) => {
  let checked = 0
  walk(ROOT, (path, isDir) => {
    if (isDir || !CHECKED.test(path) || path.endsWith('package-lock.json')) return
    checked++
    const text = readFileSync(path, 'utf8')
    for (const name of OUTSIDE) {
      const at = text.indexOf(name)
      if (at >= 0) t.fail(`${relative(ROOT, path)}:${text.slice(0, at).split('\n').length} cites ${name}`)
    }
  })
  t.ok(checked > 100, `${checked} files checked`)
})

/** The folders whose every subfolder has a README.md. */
const DOCUMENTED = ['src', 'actors', 'gateway', 'sandbox', 'schemas', 'deploy', 'console', 'bench', 'tests', 'docs']

/** Folders without a README, each with its reason. Keep this short. */
const EXEMPT = new Map<string, string>([])

t.test('every folder of the code and docs folders has a README.md', async (t) => {
  for (const top of DOCUMENTED) {
    const dir = join(ROOT, top)
    if (!existsSync(dir)) continue
    const folders = [dir]
    walk(dir, (path, isDir) => isDir && folders.push(path))
    for (const folder of folders) {
      const rel = relative(ROOT, folder)
      if (EXEMPT.has(rel)) continue
      t.ok(existsSync(join(folder, 'README.md')), `${rel}/README.md`)
    }
  }
  for (const [rel, why] of EXEMPT) t.ok(existsSync(join(ROOT, rel)), `exempt ${rel} exists (${why})`)
})

t.test('every page of docs/ is linked from docs/README.md', async (t) => {
  const index = readFileSync(join(ROOT, 'docs', 'README.md'), 'utf8')
  const linked = new Set([...index.matchAll(/\]\(([^)#\s]+\.md)(?:#[^)]*)?\)/g)].map((m) => m[1]))
  const pages = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md')
  t.ok(pages.length >= 10, `${pages.length} pages`)
  for (const page of pages) t.ok(linked.has(page), `docs/README.md links ${page}`)
})
