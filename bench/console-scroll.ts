import { readFileSync } from 'node:fs'
import type { Page } from 'playwright-core'
import { childPids, ticksBetween, ticksToMicros, treeTicks } from './lib/cpu.ts'

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
