import { readFileSync } from 'node:fs'
import { Marked } from 'marked'
import pg from 'pg'
import type { BrowserContext, Page } from 'playwright-core'
import { childPids, ticksBetween, ticksToMicros, treeTicks } from './lib/cpu.ts'
import type { Row } from './lib/types.ts'

/*
 * The chat's scripted scroll (the console benchmark's chat rows): the message list scrolled from
 * the bottom to the top and back, a fixed distance per animation frame, while a PerformanceObserver
 * collects long tasks (those over 50 ms, the browser's own definition) and every frame's interval
 * is recorded. The same script runs on the console's chat page and on the floor: the same messages
 * as static HTML, scrolled by the browser alone.
 */
export interface ScrollResult {
  steps: number
  durationS: number
  longTasks: number
  longestTaskMs: number
  frameP50Ms: number
  frameP99Ms: number
  frameMaxMs: number
  /** CPU of the browser's processes (all of them: main, renderer, GPU) per scrolled frame. */
  cpuUsPerStep: number
}

/** The page-side scroll: the list element's selector, the step in pixels per frame. */
const SCRIPT = (selector: string, step: number) => `(async () => {
  const el = document.querySelector(${JSON.stringify(selector)})
  const long = []
  const po = new PerformanceObserver((l) => { for (const e of l.getEntries()) long.push(e.duration) })
  po.observe({ type: 'longtask', buffered: false })
  const frames = []
  let steps = 0
  const frame = () => new Promise((r) => requestAnimationFrame(r))
  let last = await frame()
  const started = last
  const tick = async () => { const now = await frame(); frames.push(now - last); last = now; steps++ }
  el.scrollTop = el.scrollHeight
  await tick()
  while (el.scrollTop > 0) { el.scrollTop = Math.max(0, el.scrollTop - ${String(step)}); await tick() }
  while (el.scrollTop + el.clientHeight < el.scrollHeight - 1) { el.scrollTop = el.scrollTop + ${String(step)}; await tick() }
  // long tasks are reported after they end: one more frame lets the last one arrive
  await frame()
  po.disconnect()
  return { steps, ms: last - started, long, frames }
})()`

/** The browser's own processes: this process's children named chromium (not the platform child). */
function browserRoots(): number[] {
  return childPids(process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${String(pid)}/comm`, 'utf8')
        .trim()
        .startsWith('chrom')
    } catch {
      return false
    }
  })
}

export async function scriptedScroll(page: Page, selector: string, step = 400): Promise<ScrollResult> {
  const roots = browserRoots()
  const before = treeTicks(roots)
  const r = (await page.evaluate(SCRIPT(selector, step))) as {
    steps: number
    ms: number
    long: number[]
    frames: number[]
  }
  const cpu = ticksToMicros(ticksBetween(before, treeTicks(roots)))
  const frames = r.frames.slice().sort((a, b) => a - b)
  const at = (q: number) => frames[Math.min(frames.length - 1, Math.floor(q * frames.length))] ?? 0
  return {
    steps: r.steps,
    durationS: r.ms / 1000,
    longTasks: r.long.length,
    longestTaskMs: r.long.length === 0 ? 0 : Math.max(...r.long),
    frameP50Ms: at(0.5),
    frameP99Ms: at(0.99),
    frameMaxMs: frames.at(-1) ?? 0,
    cpuUsPerStep: r.steps === 0 ? 0 : cpu / r.steps,
  }
}

const NAME = 'console chat'
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

/**
 * The chat rows of the console benchmark: a chat of 1,000 messages (written straight into the
 * platform's table, as 500 turns would have left it), scrolled as static HTML (the floor, the
 * baseline row) and in the console's chat page, first and second pass (target: no task over 50 ms).
 */
export async function chatScrollRows(o: {
  apiBase: string
  token: string
  databaseUrl: string
  consoleBase: string
  context: BrowserContext
}): Promise<Row[]> {
  const rows: Row[] = []
  const res = await fetch(`${o.apiBase}/agents/default/default/chats`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.token}`, 'content-type': 'application/json' },
    body: '{}',
  })
  if (res.status !== 201) throw new Error(`chat: ${String(res.status)} ${await res.text()}`)
  const chatId = ((await res.json()) as { id: string }).id
  const msgs = Array.from({ length: MESSAGES }, (_, i) => message(i))
  const db = new pg.Client({ connectionString: o.databaseUrl })
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

  // the floor: the same messages, static
  const marked = new Marked({ gfm: true, breaks: true, async: false })
  const html = msgs
    .map(
      (m) =>
        `<article class="${m.role}">${m.role === 'user' ? `<p>${m.content}</p>` : (marked.parse(m.content) as string)}</article>`,
    )
    .join('\n')
  const floor = await o.context.newPage()
  await floor.setViewportSize({ width: 1280, height: 860 })
  await floor.setContent(
    `<!doctype html><html><head><style>body{margin:0;font:15px system-ui}#list{height:700px;overflow-y:auto}article{padding:6px 12px}article.user{text-align:right}pre{background:#f4f5f7;padding:8px}</style></head><body><div id="list">${html}</div></body></html>`,
  )
  process.stderr.write('  scrolling the floor\n')
  await scriptedScroll(floor, '#list') // warm-up
  const f = await scriptedScroll(floor, '#list')
  rows.push(row(`${String(MESSAGES)} messages as static HTML, scrolled (floor)`, f, { baseline: true }))
  await floor.close()

  const page = await o.context.newPage()
  await page.setViewportSize({ width: 1280, height: 860 })
  await page.goto(`${o.consoleBase}/chat/${chatId}`)
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
}
