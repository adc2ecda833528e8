import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'

/*
 * The repository's markdown is read on GitHub and in editors: an unclosed code fence swallows every
 * section after it (the README once lost its Connectors section that way), and a relative link to
 * a moved or renamed file, or to a heading that no longer exists, leads nowhere. Both are checked
 * here for every markdown file in the repository.
 */
const ROOT = resolve(import.meta.dirname, '../..')
const SKIP = new Set(['node_modules', '.git', '.tap', 'dist', 'coverage'])

function markdownFiles(dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue
    const path = join(dir, name)
    const stat = statSync(path)
    if (stat.isDirectory()) out.push(...markdownFiles(path))
    else if (name.endsWith('.md')) out.push(path)
  }
  return out
}

/** A fence line as CommonMark reads it: up to 3 spaces, then 3+ backticks or tildes. */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/

type Scan = { unclosed: number | null; prose: { line: number; text: string }[] }

/** Splits a file into prose lines and fenced blocks; reports the line of a fence never closed. */
function scan(text: string): Scan {
  const prose: Scan['prose'] = []
  let open: { marker: string; line: number } | null = null
  text.split('\n').forEach((line, i) => {
    const m = FENCE.exec(line)
    if (open === null) {
      // A backtick fence's info string may not contain a backtick (then it is inline code).
      if (m && !(m[1]![0] === '`' && m[2]!.includes('`'))) open = { marker: m[1]!, line: i + 1 }
      else prose.push({ line: i + 1, text: line })
    } else if (m && m[1]![0] === open.marker[0] && m[1]!.length >= open.marker.length && m[2]!.trim() === '') {
      open = null
    }
  })
  return { unclosed: open === null ? null : (open as { line: number }).line, prose }
}

/** GitHub's heading anchor: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

function anchors(file: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const { text } of scan(readFileSync(file, 'utf8')).prose) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)
    if (!m) continue
    const base = slug(m[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

/** Link targets in prose, inline (`[x](target)`) and reference definitions (`[x]: target`), code spans removed. */
function links(prose: Scan['prose']): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = []
  for (const { line, text } of prose) {
    const plain = text.replace(/(`+)[^`]*?\1/g, '')
    for (const m of plain.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ line, target: m[1]! })
    const ref = /^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(\s|$)/.exec(plain)
    if (ref) out.push({ line, target: ref[1]! })
  }
  return out
}

const files = markdownFiles(ROOT)

t.test('the repository has its markdown files', async (t) => {
  t.ok(files.length >= 10, `${files.length} markdown files found`)
  t.ok(files.includes(join(ROOT, 'README.md')))
})

t.test('every code fence in every markdown file is closed', async (t) => {
  for (const file of files) {
    const { unclosed } = scan(readFileSync(file, 'utf8'))
    t.equal(
      unclosed,
      null,
      `${relative(ROOT, file)}: ${unclosed === null ? 'fences balanced' : `the fence opened on line ${unclosed} is never closed`}`,
    )
  }
})

t.test('relative links between markdown files resolve, anchors included', async (t) => {
  let checked = 0
  for (const file of files) {
    for (const { line, target } of links(scan(readFileSync(file, 'utf8')).prose)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // http:, https:, mailto:, …
      const [path, anchor] = target.split('#', 2) as [string, string | undefined]
      const where = `${relative(ROOT, file)}:${line} → ${target}`
      const dest = path === '' ? file : resolve(dirname(file), decodeURIComponent(path))
      checked++
      if (!existsSync(dest)) {
        t.fail(`${where}: ${relative(ROOT, dest)} does not exist`)
        continue
      }
      if (anchor && dest.endsWith('.md')) t.ok(anchors(dest).has(anchor.toLowerCase()), `${where}: the heading exists`)
    }
  }
  t.ok(checked > 0, `${checked} relative links checked`)
})

t.test('the checks themselves: an unclosed fence and a dead link are caught', async (t) => {
  t.equal(scan('a\n```sh\nx\n```\nb').unclosed, null)
  t.equal(scan('a\n```json\n{}\n## Next\n').unclosed, 2, 'the fence that swallows the next section')
  t.equal(scan('````\n```\n````').unclosed, null, 'a shorter fence inside a longer one does not close it')
  t.equal(scan('~~~\n```\n~~~').unclosed, null, 'a backtick line does not close a tilde fence')
  t.same(
    links(scan('see [a](b.md#c) and `[x](y)`\n```\n[z](w)\n```').prose),
    [{ line: 1, target: 'b.md#c' }],
    'code is not prose',
  )
  t.equal(slug('Templates, email, discovery and manifests'), 'templates-email-discovery-and-manifests')
  t.equal(slug('Files: `a.md` / b.md'), 'files-amd--bmd')
})
