import { Marked } from 'marked'
import pg from 'pg'
import { startConsoleServer } from '../src/console/server.ts'
import { ensureConsoleBuild } from '../src/console/build.ts'
import { createLogger } from '../src/kernel/log.ts'
import { ensureChromium, launchChromium } from '../tests/helpers/chromium.ts'
import { scriptedScroll, type ScrollResult } from './console-scroll.ts'
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
const MESSAGES = 1000

/** A chat's worth of varied answers: paragraphs, lists, code, a table; questions between them. */
function message(i: number): { role: 'user' | 'assistant'; content: string } {
  if (i % 2 === 0) return { role: 'user', content: `Question ${String(i)}: what about item ${String(i * 7)}?` }
  const kinds = [
    `Here is the answer to **${String(i)}**. It is short.`,
    `A longer answer with a list:\n\n- first point about ${String(i)}\n- second point, with \`inline code\`\n- third point\n\nAnd a closing paragraph that wraps over a few lines because it goes on for a while about nothing in particular.`,
    `Some code:\n\n\`\`\`python\ndef handler(input, context):\n    total = sum(x * ${String(i)} for x in input["values"])\n    return {"total": total}\n\`\`\`\n\nThat returns the total.`,
    `| name | value |\n|---|---|\n| a | ${String(i)} |\n| b | ${String(i * 2)} |\n\nA table.`,
  ]
  return { role: 'assistant', content: kinds[i % kinds.length] as string }
}

function row(label: string, r: ScrollResult, extra: Partial<Row> = {}): Row {
  return {
    benchmark: NAME,
    case: label,
    requests: r.steps,
    durationS: r.durationS,
    rps: r.durationS === 0 ? 0 : r.steps / r.durationS,
    cpuUsPerReq: r.cpuUsPerStep,
    latencyP50Ms: r.frameP50Ms,
    latencyP99Ms: r.frameP99Ms,
    errors: 0,
    note: `longest task ${r.longestTaskMs.toFixed(0)} ms (${String(r.longTasks)} over 50 ms), longest frame ${r.frameMaxMs.toFixed(0)} ms; steps are frames, latency columns frame intervals`,
    ...extra,
  }
}

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
    const res = await fetch(`${base}/agents/default/default/chats`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    })
    if (res.status !== 201) throw new Error(`chat: ${String(res.status)} ${await res.text()}`)
    const chatId = ((await res.json()) as { id: string }).id
    // the history written straight into the table, as 500 turns would have left it
    const msgs = Array.from({ length: MESSAGES }, (_, i) => message(i))
    const db = new pg.Client({ connectionString: databaseUrl })
    await db.connect()
    try {
      await db.query(
        `insert into chat_messages (chat_id, role, content)
         select $1::uuid, m->>'role', m->>'content' from jsonb_array_elements($2::jsonb) with ordinality as t(m, n) order by n`,
        [chatId, JSON.stringify(msgs)],
      )
      await db.query('update chats set message_count = $2, last_message_at = now() where id = $1', [chatId, MESSAGES])
    } finally {
      await db.end()
    }

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

    // the floor: the same messages, static
    const marked = new Marked({ gfm: true, breaks: true, async: false })
    const html = msgs
      .map(
        (m) =>
          `<article class="${m.role}">${m.role === 'user' ? `<p>${m.content}</p>` : (marked.parse(m.content) as string)}</article>`,
      )
      .join('\n')
    const floor = await browser.context.newPage()
    await floor.setViewportSize({ width: 1280, height: 860 })
    await floor.setContent(
      `<!doctype html><html><head><style>body{margin:0;font:15px system-ui}#list{height:700px;overflow-y:auto}article{padding:6px 12px}article.user{text-align:right}pre{background:#f4f5f7;padding:8px}</style></head><body><div id="list">${html}</div></body></html>`,
    )
    process.stderr.write('  scrolling the floor\n')
    await scriptedScroll(floor, '#list') // warm-up
    const f = await scriptedScroll(floor, '#list')
    rows.push(row(`${String(MESSAGES)} messages as static HTML, scrolled (floor)`, f, { baseline: true }))
    await floor.close()

    const page = await browser.context.newPage()
    await page.setViewportSize({ width: 1280, height: 860 })
    await page.goto(`${consoleBase}/chat/${chatId}`)
    await page.locator('.chat-messages article').first().waitFor({ timeout: 60_000 })
    process.stderr.write('  scrolling the chat page\n')
    // the first scroll renders and measures every row; the second finds their heights known
    for (const pass of ['first scroll', 'second scroll']) {
      const c = await scriptedScroll(page, '.chat-messages')
      rows.push(
        row(`console chat page, ${String(MESSAGES)} messages (virtual list), ${pass}`, c, {
          checks: [`longest task ≤ 50 ms ${c.longestTaskMs <= 50 ? 'ok' : 'OVER'}`],
        }),
      )
    }
    await page.close()
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
