import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { build, type Metafile } from 'esbuild'
import { chromium, type BrowserContext } from 'playwright-core'
import { CONSOLE_ROOT, ensureConsoleBuild } from '../src/console/build.ts'
import { startConsoleServer } from '../src/console/server.ts'
import { createLogger } from '../src/kernel/log.ts'
import { chatScrollRows } from './console-scroll.ts'
import { removeTempDir, startPlatformChild, tempDir } from './lib/children.ts'
import { quantile } from './lib/sequential.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * The console's budgets (docs/console.md), in the same run as their floors:
 *   bundle   the initial JavaScript of the console gzipped: the entry and the chunks it imports
 *            statically (pages and the editor are dynamic imports, not counted), against React +
 *            ReactDOM alone rendering one element (the floor any React page pays). Budget 250 KB.
 *   fcp      first contentful paint in Chromium over loopback of a signed-in console page
 *            (/resources/skills through the console server and a platform child), against a static
 *            HTML page from a bare node:http server (the browser's own floor). Budget p50 ≤ 1 s.
 *   chat     a 1,000-message chat scrolled in the chat page's virtual list (first and second pass),
 *            against the same messages as static HTML: no task over 50 ms (console-scroll.ts; on
 *            the platform and in the browser of the fcp rows).
 * `measureFcp` is exported for the other console rows (the chat page).
 */
const NAME = 'console'
const BUDGET_JS_KB = 250
const BUDGET_FCP_MS = 1000
const LOADS = Number(process.env['BENCH_CONSOLE_LOADS'] ?? 15)

/** The entry chunk and its static imports (esbuild metafile), gzipped, in bytes. */
export function initialJsGzip(
  metafile: Metafile,
  outRoot: string,
  entryPoint: string,
): { bytes: number; files: number } {
  const outputs = metafile.outputs
  const entry = Object.keys(outputs).find((k) => outputs[k]?.entryPoint === entryPoint)
  if (entry === undefined) throw new Error(`no output for ${entryPoint}`)
  const seen = new Set<string>()
  const walk = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const imp of outputs[file]?.imports ?? []) if (imp.kind === 'import-statement') walk(imp.path)
  }
  walk(entry)
  let bytes = 0
  for (const f of seen) if (f.endsWith('.js')) bytes += gzipSync(readFileSync(join(outRoot, f)), { level: 9 }).length
  return { bytes, files: seen.size }
}

async function bundleRows(): Promise<Row[]> {
  const dir = tempDir('console-bench-')
  try {
    const common = {
      absWorkingDir: CONSOLE_ROOT,
      bundle: true,
      splitting: true,
      format: 'esm' as const,
      minify: true,
      metafile: true,
      jsx: 'automatic' as const,
      define: { 'process.env.NODE_ENV': '"production"' },
      legalComments: 'none' as const,
      logLevel: 'silent' as const,
      outdir: join(dir, 'out'),
    }
    // the floor: React and ReactDOM rendering one element
    // (a file in the console folder, so that react resolves from the same node_modules)
    const floorEntry = join(CONSOLE_ROOT, `.bench-floor-${String(process.pid)}.tsx`)
    writeFileSync(floorEntry, "import { createRoot } from 'react-dom/client'\ncreateRoot(document.body).render('hi')\n")
    let floor
    try {
      floor = await build({ ...common, entryPoints: { floor: floorEntry }, outdir: join(dir, 'floor') })
    } finally {
      rmSync(floorEntry, { force: true })
    }
    const floorSize = initialJsGzip(floor.metafile as Metafile, CONSOLE_ROOT, floorEntry.slice(CONSOLE_ROOT.length + 1))
    const consoleBuild = await build({ ...common, entryPoints: { main: join(CONSOLE_ROOT, 'src', 'main.tsx') } })
    const meta = consoleBuild.metafile as Metafile
    const size = initialJsGzip(meta, CONSOLE_ROOT, 'src/main.tsx')
    const chunks = Object.keys(meta.outputs).filter((f) => f.endsWith('.js')).length
    const kb = (b: number) => b / 1024
    const row = (c: string, bytes: number, note: string, extra: Partial<Row> = {}): Row => ({
      benchmark: `${NAME} bundle`,
      case: c,
      requests: 0,
      durationS: 0,
      rps: 0,
      cpuUsPerReq: 0,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      errors: 0,
      note: `${kb(bytes).toFixed(1)} KB gzipped; ${note}`,
      ...extra,
    })
    return [
      row('react + react-dom alone (floor)', floorSize.bytes, 'one element rendered', { baseline: true }),
      row(
        'console initial JS',
        size.bytes,
        `${String(size.files)} files of ${String(chunks)} JS chunks; ${(size.bytes / floorSize.bytes).toFixed(2)}× the floor`,
        {
          checks: [
            `${kb(size.bytes).toFixed(1)} KB ≤ ${String(BUDGET_JS_KB)} KB ${kb(size.bytes) <= BUDGET_JS_KB ? 'ok' : 'OVER'}`,
          ],
        },
      ),
    ]
  } finally {
    removeTempDir(dir)
  }
}

/** First contentful paint of `url` in `context`, `loads` fresh pages (the first is a warm-up), in ms. */
export async function measureFcp(
  context: BrowserContext,
  url: string,
  loads: number,
  ready: string,
): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i <= loads; i++) {
    const page = await context.newPage()
    await page.goto(url)
    await page.waitForSelector(ready)
    // the paint entry, waited for if the browser has not recorded it yet
    const fcp = (await page.evaluate(`new Promise((resolve) => {
      const e = performance.getEntriesByName('first-contentful-paint')[0]
      if (e !== undefined) return resolve(e.startTime)
      new PerformanceObserver((l) => {
        const f = l.getEntriesByName('first-contentful-paint')[0]
        if (f !== undefined) resolve(f.startTime)
      }).observe({ type: 'paint', buffered: true })
    })`)) as number
    await page.close()
    if (i > 0) out.push(fcp)
  }
  return out
}

async function fcpRows(): Promise<Row[]> {
  const dataDir = tempDir('console-bench-platform-')
  const password = 'bench-console-password'
  const platform = await startPlatformChild(dataDir, {
    AUTH_MODE: 'password',
    SUPERADMIN_PASSWORD: password,
    SUPERADMIN_EMAIL: 'admin@bench.local',
    CONSOLE_PORT: '0',
  })
  const buildDir = tempDir('console-bench-build-')
  const log = createLogger({ level: 'warn' })
  const floorServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>floor</title><h1>Hello</h1>')
  })
  await new Promise<void>((r) => floorServer.listen(0, '127.0.0.1', () => r()))
  const profile = tempDir('console-bench-chromium-')
  let context: BrowserContext | undefined
  try {
    const built = await ensureConsoleBuild(join(buildDir, 'console'), log)
    const server = await startConsoleServer({
      host: '127.0.0.1',
      port: 0,
      dir: built.dir,
      apiUrl: `http://127.0.0.1:${String(platform.info.port)}`,
      apiPublicUrl: `http://127.0.0.1:${String(platform.info.port)}`,
      refreshDays: 1,
      trustedProxies: '',
      log,
    })
    try {
      const base = `http://127.0.0.1:${String(server.port)}`
      context = await chromium.launchPersistentContext(profile, {
        executablePath: '/usr/bin/chromium',
        headless: true,
        viewport: { width: 1280, height: 800 },
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
      })
      const login = await context.request.post(`${base}/session/login`, {
        headers: { 'x-console-request': '1' },
        data: { email: 'admin@bench.local', password },
      })
      if (login.status() !== 200) throw new Error(`console sign-in answered ${String(login.status())}`)
      const floorUrl = `http://127.0.0.1:${String((floorServer.address() as AddressInfo).port)}/`
      const floor = (await measureFcp(context, floorUrl, LOADS, 'h1')).sort((a, b) => a - b)
      const page = (await measureFcp(context, `${base}/resources/skills`, LOADS, 'main h1')).sort((a, b) => a - b)
      const row = (c: string, samples: number[], extra: Partial<Row> = {}): Row => ({
        benchmark: `${NAME} fcp`,
        case: c,
        requests: samples.length,
        durationS: 0,
        rps: 0,
        cpuUsPerReq: 0,
        latencyP50Ms: quantile(samples, 0.5),
        latencyP99Ms: quantile(samples, 0.99),
        errors: 0,
        note: `first contentful paint, ${String(samples.length)} loads in Chromium over loopback (1280×800)`,
        ...extra,
      })
      const p50 = quantile(page, 0.5)
      const { token, databaseUrl } = platform.info
      if (token === undefined || databaseUrl === undefined)
        throw new Error('platform child reported no token or database')
      const apiBase = `http://127.0.0.1:${String(platform.info.port)}`
      const chat = await chatScrollRows({ apiBase, token, databaseUrl, consoleBase: base, context })
      return [
        row('static HTML page (floor)', floor, { baseline: true }),
        row('console /resources/skills, signed in', page, {
          checks: [
            `FCP p50 ${p50.toFixed(0)} ms ≤ ${String(BUDGET_FCP_MS)} ms ${p50 <= BUDGET_FCP_MS ? 'ok' : 'OVER'}`,
          ],
        }),
        ...chat,
      ]
    } finally {
      await server.close()
    }
  } finally {
    await context?.close()
    floorServer.close()
    await platform.stop()
    removeTempDir(profile)
    removeTempDir(buildDir)
  }
}

const bench: Benchmark = {
  name: NAME,
  description:
    'the console: initial JS gzipped vs React alone; first contentful paint vs a static page; a 1,000-message chat scrolled vs static HTML',
  async run() {
    return [...(await bundleRows()), ...(await fcpRows())]
  },
}
export default bench
