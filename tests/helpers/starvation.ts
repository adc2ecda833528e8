/**
 * How long this process was kept from running, over a window: a 25 ms interval timer records how
 * late each of its wakeups came. On a quiet machine the sum over any window is near zero; with the
 * two cores shared by parallel test files, every process waits for the CPU the same way, so a test
 * that bounds another process's latency allows the sum over the same window on top of its bound.
 * A single worst stall understates this: a takeover is a chain of many short steps, each delayed a
 * little.
 */
export interface StarvationMeter {
  /** The summed lateness (ms) of the wakeups that fell between the two times (epoch ms). */
  between(from: number, to: number): number
  stop(): void
}

export function starvationMeter(intervalMs = 25): StarvationMeter {
  const wakes: { at: number; late: number }[] = []
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    const late = now - last - intervalMs
    last = now
    if (late > 1) wakes.push({ at: Date.now(), late })
  }, intervalMs)
  timer.unref()
  return {
    between: (from, to) =>
      Math.round(wakes.filter((w) => w.at >= from && w.at <= to).reduce((sum, w) => sum + w.late, 0)),
    stop: () => clearInterval(timer),
  }
}
