import { createHash } from 'node:crypto'
import { build, type Message, type Plugin } from 'esbuild'
import { AppError, type FieldIssue } from '../kernel/errors.ts'

/*
 * Builds a component's source_code (JSX/TSX/JS) into one browser script with esbuild. esbuild runs
 * as its own child process and its API is async, so a compile never blocks the service's event
 * loop. The source is built from memory (stdin) and every import goes through `pageGlobals`: the
 * page's own libraries become reads of globals the page defines, anything else is refused — so a
 * source can never pull a file of the server (`import '/etc/passwd'`) into its bundle.
 */
export interface Compiled {
  bundle: string
  sourceSha256: string
  warnings: { line: number; column: number; message: string }[]
}

/** What a source may import, and the global of the page each one reads. */
const GLOBAL_MODULES: Record<string, string> = {
  react: 'module.exports = globalThis.React',
  'react-dom': 'module.exports = globalThis.ReactDOM',
  'react-dom/client': 'module.exports = globalThis.ReactDOM',
  'platform-ui': 'module.exports = globalThis.PlatformUI',
  // the automatic JSX runtime on top of createElement (React 18's UMD build has no jsx-runtime)
  'react/jsx-runtime': `var R = globalThis.React;
function jsx(type, props, key) { var p = Object.assign({}, props); if (key !== undefined) p.key = key; return R.createElement(type, p); }
module.exports = { jsx: jsx, jsxs: jsx, Fragment: R.Fragment };`,
}

const pageGlobals: Plugin = {
  name: 'page-globals',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined
      if (Object.hasOwn(GLOBAL_MODULES, args.path)) return { path: args.path, namespace: 'page-global' }
      return {
        errors: [
          {
            text: `cannot import "${args.path}": a component may import only ${Object.keys(GLOBAL_MODULES).join(', ')}`,
          },
        ],
      }
    })
    b.onLoad({ filter: /.*/, namespace: 'page-global' }, (args) => ({
      contents: GLOBAL_MODULES[args.path] ?? '',
      loader: 'js',
    }))
  },
}

export const sourceSha256 = (source: string): string => createHash('sha256').update(source).digest('hex')

const issueOf = (m: Message): FieldIssue & { line: number; column: number } => {
  const line = m.location?.line ?? 0
  // esbuild counts columns from 0; editors and the API say column 1 for the first character
  const column = (m.location?.column ?? -1) + 1
  return { path: 'source_code', line, column, message: `line ${String(line)}, column ${String(column)}: ${m.text}` }
}

/** Compiles; a source that does not build is a 422 `component.compile_failed` naming line and column of each error. */
export async function compileComponent(source: string, maxBundleBytes: number): Promise<Compiled> {
  let result
  try {
    result = await build({
      stdin: { contents: source, loader: 'tsx', sourcefile: 'source_code' },
      bundle: true,
      write: false,
      format: 'iife',
      globalName: 'PlatformComponent',
      platform: 'browser',
      target: 'es2020',
      jsx: 'automatic',
      minify: true,
      legalComments: 'none',
      logLevel: 'silent',
      plugins: [pageGlobals],
    })
  } catch (err) {
    const errors = (err as { errors?: Message[] }).errors
    if (!Array.isArray(errors)) throw err
    const issues = errors.slice(0, 20).map(issueOf)
    const first = issues[0]
    throw new AppError(
      422,
      'component.compile_failed',
      first === undefined ? 'the source does not compile' : `the source does not compile: ${first.message}`,
      { issues },
    )
  }
  // esbuild (platform browser) writes `</script` in strings as `<\/script`; anything left (a regex,
  // a template) is escaped the same way, so the bundle can sit inside the page's <script> element
  const bundle = (result.outputFiles[0]?.text ?? '').replace(/<\/(script)/gi, '<\\/$1')
  const bytes = Buffer.byteLength(bundle)
  if (bytes > maxBundleBytes)
    throw new AppError(
      422,
      'component.bundle_too_large',
      `the bundle is ${String(bytes)} bytes; COMPONENT_MAX_BUNDLE_BYTES is ${String(maxBundleBytes)}`,
    )
  return {
    bundle,
    sourceSha256: sourceSha256(source),
    warnings: result.warnings.slice(0, 50).map((w) => {
      const i = issueOf(w)
      return { line: i.line, column: i.column, message: w.text }
    }),
  }
}
