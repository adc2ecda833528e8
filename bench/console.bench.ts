import { startConsoleServer } from '../src/console/server.ts'
import { ensureConsoleBuild } from '../src/console/build.ts'
import { createLogger } from '../src/kernel/log.ts'
import { ensureChromium, launchChromium } from '../tests/helpers/chromium.ts'
import { chatScrollRows } from './console-scroll.ts'
import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * The console in a real browser (Debian's chromium, headless), on a platform child:
 *   floor     the chat's 1,000 messages as static HTML (marked, no script), scrolled by the browser
 *   chat      the console's chat page (/chat/<id>) with the same 1,000 messages in its virtual list
 * Both get the same scripted scroll (console-scroll.ts): bottom to top and back, 400 px per frame.
 * Target (issue 41): no task longer than 50 ms during the chat page's scroll (PerformanceObserver
 * 'longtask'). The rows' "latency" columns are frame intervals; CPU is the browser's processes per
 * scrolled frame.
 */
const NAME = 'console'

async function run(): Promise<Row[]> {
  const why = ensureChromium()
  if (why !== null) throw new Error(`console benchmark needs chromium: ${why}`)
  const rows: Row[] = []
  const dataDir = tempDir('bench-console-')
  let child: ServerChild | undefined
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined
  let closeConsole: (() => Promise<void>) | undefined
  try {
    process.stderr.write('  starting platform...\n')
    child = await startPlatformChild(dataDir)
    const { token, databaseUrl } = child.info
    if (token === undefined || databaseUrl === undefined)
      throw new Error('platform child reported no token or database')
    const base = `http://127.0.0.1:${String(child.info.port)}`
    process.stderr.write('  building and serving the console...\n')
    const log = createLogger({ level: 'warn' })
    const build = await ensureConsoleBuild(`${dataDir}/console`, log)
    const server = await startConsoleServer({
      host: '127.0.0.1',
      port: 0,
      dir: build.dir,
      apiUrl: base,
      apiPublicUrl: base,
      refreshDays: 1,
      trustForwardedProto: false,
      log,
    })
    closeConsole = () => server.close()
    const consoleBase = `http://127.0.0.1:${String(server.port)}`

    browser = await launchChromium()
    await browser.context.addCookies([
      { name: 'console_at', value: token, url: consoleBase, httpOnly: true, sameSite: 'Strict' },
    ])

    rows.push(...(await chatScrollRows({ apiBase: base, token, databaseUrl, consoleBase, context: browser.context })))
    return rows
  } finally {
    await browser?.close()
    await closeConsole?.()
    await child?.stop()
    removeTempDir(dataDir)
  }
}

const bench: Benchmark = {
  name: NAME,
  description: 'the console chat page: a scripted scroll of 1,000 messages vs the same messages as static HTML',
  run,
}
export default bench
