import t from 'tap'
import { createLifecycle, STOP_BUDGET_MS } from '../../src/roles/lifecycle.ts'
import { createLogger } from '../../src/kernel/log.ts'

/*
 * Shutdown within one budget: a step that never ends costs the budget, and the steps after it
 * still run (unawaited), so their timers, pools and subscriptions do not keep the process alive.
 */
t.test('a step that hangs does not skip the steps after it', async (t) => {
  const life = createLifecycle(createLogger({ level: 'silent' }))
  const ran: string[] = []
  let laterStep!: () => void
  const laterRan = new Promise<void>((resolve) => (laterStep = resolve))
  life.onStop(async () => {
    ran.push('registered first, stops last')
    laterStep()
  })
  life.onStop(() => new Promise<void>(() => ran.push('hangs')))
  life.onStop(async () => void ran.push('registered last, stops first'))
  const started = Date.now()
  await life.close()
  t.ok(Date.now() - started >= STOP_BUDGET_MS - 50, 'close waited the budget for the hanging step')
  await laterRan
  t.same(ran, ['registered last, stops first', 'hangs', 'registered first, stops last'])
})

t.test('steps run once, in reverse order of registration', async (t) => {
  const life = createLifecycle(createLogger({ level: 'silent' }))
  const ran: number[] = []
  for (const n of [1, 2, 3]) life.onStop(async () => void ran.push(n))
  await life.close()
  await life.close()
  t.same(ran, [3, 2, 1])
})
