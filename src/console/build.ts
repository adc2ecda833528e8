import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { build } from 'esbuild'
import type { Logger } from '../kernel/log.ts'

/*
 * Builds the console (console/src, React) with the project's esbuild into static files, when the
 * build is stale: a stamp holds the hash of every source file, the page template and the build
 * options; an equal stamp means the files in `outDir` are current. The build goes to a fresh
 * directory renamed into place, so two processes building at once never serve a half-written one.
 * The entry and every page are ES modules split into chunks (`splitting: true`): a page's code,
 * and the editor, load on first use.
 */
export const CONSOLE_ROOT = join(import.meta.dirname, '..', '..', 'console')

/** Bumped when the options below change, so an old build is stale. */
const BUILD_VERSION = '1'

export interface ConsoleBuild {
  dir: string
  /** Whether this call built (false: the stamp matched). */
  built: boolean
  /** The entry script and stylesheet, as the page references them (`/static/…`). */
  entry: { script: string; style: string | undefined }
}

function sourceFiles(dir: string): string[] {
  const out: string[] = []
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) out.push(...sourceFiles(p))
    else out.push(p)
  }
  return out.sort()
}

/** The hash of what the build reads: the sources, the page template, the versions of esbuild and React. */
export function sourceHash(root = CONSOLE_ROOT): string {
  const h = createHash('sha256').update(BUILD_VERSION)
  for (const f of [...sourceFiles(join(root, 'src')), join(root, 'index.html')]) {
    h.update(relative(root, f)).update('\0').update(readFileSync(f)).update('\0')
  }
  for (const pkg of ['esbuild', 'react', 'react-dom']) {
    const file = join(root, '..', 'node_modules', pkg, 'package.json')
    if (existsSync(file)) h.update((JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version)
  }
  return h.digest('hex')
}

const STAMP = 'build-stamp.json'

/** Builds into `outDir` unless its stamp matches the sources; answers where the files are. */
export async function ensureConsoleBuild(outDir: string, log?: Logger, root = CONSOLE_ROOT): Promise<ConsoleBuild> {
  const hash = sourceHash(root)
  const stampFile = join(outDir, STAMP)
  if (existsSync(stampFile)) {
    const stamp = JSON.parse(readFileSync(stampFile, 'utf8')) as { hash: string; entry: ConsoleBuild['entry'] }
    if (stamp.hash === hash) return { dir: outDir, built: false, entry: stamp.entry }
  }
  const started = performance.now()
  const tmp = `${outDir}.tmp-${String(process.pid)}-${String(Date.now())}`
  mkdirSync(tmp, { recursive: true })
  try {
    const result = await build({
      absWorkingDir: root,
      entryPoints: { main: join(root, 'src', 'main.tsx') },
      outdir: join(tmp, 'static'),
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'browser',
      target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
      minify: true,
      sourcemap: false,
      metafile: true,
      jsx: 'automatic',
      entryNames: '[name]-[hash]',
      chunkNames: 'chunks/[name]-[hash]',
      assetNames: 'assets/[name]-[hash]',
      define: { 'process.env.NODE_ENV': '"production"' },
      legalComments: 'none',
      logLevel: 'silent',
      tsconfig: join(root, 'tsconfig.json'),
    })
    let script = ''
    let style: string | undefined
    for (const [file, meta] of Object.entries(result.metafile.outputs)) {
      if (meta.entryPoint !== 'src/main.tsx') continue
      script = `/static/${relative(join(tmp, 'static'), join(root, file))}`
      if (meta.cssBundle !== undefined) style = `/static/${relative(join(tmp, 'static'), join(root, meta.cssBundle))}`
    }
    const entry = { script, style }
    writeFileSync(join(tmp, 'index.html'), pageHtml(readFileSync(join(root, 'index.html'), 'utf8'), entry))
    writeFileSync(join(tmp, STAMP), JSON.stringify({ hash, entry }))
    // the old build out of the way, the new one in (a reader of the old one finishes on its open files)
    const old = `${outDir}.old-${String(process.pid)}-${String(Date.now())}`
    if (existsSync(outDir)) renameSync(outDir, old)
    renameSync(tmp, outDir)
    rmSync(old, { recursive: true, force: true })
    log?.info({ ms: Math.round(performance.now() - started), dir: outDir }, 'console built')
    return { dir: outDir, built: true, entry }
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true })
    throw err
  }
}

/** The page template with the hashed entry names in place of `/static/main.js` and `/static/main.css`. */
function pageHtml(template: string, entry: ConsoleBuild['entry']): string {
  let html = template.replace('/static/main.js', entry.script)
  html =
    entry.style === undefined
      ? html.replace(/\s*<link rel="stylesheet" href="\/static\/main\.css" \/>/, '')
      : html.replace('/static/main.css', entry.style)
  return html
}

/** Sizes of the built files (for the bench: the initial JS is the entry and its static imports). */
export function builtFiles(dir: string): { path: string; bytes: number }[] {
  return sourceFiles(join(dir, 'static')).map((p) => ({ path: relative(dir, p), bytes: statSync(p).size }))
}
