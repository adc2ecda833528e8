import t from 'tap'
import { scheduleActor, type ScheduleActorState } from '../../actors/schedule/actor.ts'
import type { ActorContext } from '../../actors/runtime/define-actor.ts'
import { ACTOR_FACTORIES } from '../../src/features.ts'
import { ACTOR_PROTOCOLS } from '../../actors/protocols/index.ts'
import type { ScheduleFire, ScheduleFireReply } from '../../schemas/triggers.ts'
import { checkCron, nextTick } from '../../src/kernel/cron.ts'
import { uuidV5 } from '../../src/kernel/uuid.ts'
import { tickJobId } from '../../src/schedules/tick-id.ts'
import { createLogger } from '../../src/kernel/log.ts'

/*
 * Pure parts of schedules: next-tick computation with seconds and time zones across both DST
 * transitions, the tick job id (UUID v5), and the schedule actor's handlers driven with a plain
 * context — a failed fire keeps the tick due (nothing skipped), overdue ticks are caught up one by
 * one from the last fired tick (not from the clock), a stale `set` changes nothing.
 */
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const ticks = (expr: string, tz: string, fromIso: string, n: number) => {
  const out: (string | null)[] = []
  let at = Date.parse(fromIso)
  for (let i = 0; i < n; i++) {
    const next = nextTick(expr, tz, at)
    out.push(iso(next))
    if (next === null) break
    at = next
  }
  return out
}

t.test('seconds, minutes and time zones', async (t) => {
  t.same(ticks('*/20 * * * * *', 'UTC', '2025-01-01T00:00:00.000Z', 3), [
    '2025-01-01T00:00:20.000Z',
    '2025-01-01T00:00:40.000Z',
    '2025-01-01T00:01:00.000Z',
  ])
  t.same(
    ticks('0 9 * * *', 'America/New_York', '2025-01-01T00:00:00.000Z', 2),
    ['2025-01-01T14:00:00.000Z', '2025-01-02T14:00:00.000Z'],
    '09:00 New York = 14:00 UTC in winter',
  )
  t.equal(
    iso(nextTick('* * * * * *', 'UTC', Date.parse('2025-01-01T00:00:00.500Z'))),
    '2025-01-01T00:00:01.000Z',
    'strictly after, on the second',
  )
  t.throws(() => checkCron('* * *', 'UTC'), { status: 422, code: 'schedule.invalid_cron' })
  t.throws(() => checkCron('* * * * *', 'Mars/Olympus'), { status: 422, code: 'schedule.invalid_timezone' })
  t.throws(() => checkCron('0 0 30 2 *', 'UTC'), { code: 'schedule.invalid_cron' }, 'Feb 30 never fires')
  t.doesNotThrow(() => checkCron('0 30 2 * * *', 'Europe/Berlin'))
})

t.test('DST spring forward (Europe/Berlin, 2025-03-30 02:00 → 03:00)', async (t) => {
  // a fixed-time job inside the gap runs at the first valid time after it, the same day
  t.same(ticks('0 30 2 * * *', 'Europe/Berlin', '2025-03-29T12:00:00Z', 3), [
    '2025-03-30T01:00:00.000Z',
    '2025-03-31T00:30:00.000Z',
    '2025-04-01T00:30:00.000Z',
  ])
  // an interval job skips the times that do not exist: 01:30 CET, then 03:00 CEST (one hour later in real time)
  t.same(ticks('0 */30 * * * *', 'Europe/Berlin', '2025-03-30T00:10:00Z', 3), [
    '2025-03-30T00:30:00.000Z',
    '2025-03-30T01:00:00.000Z',
    '2025-03-30T01:30:00.000Z',
  ])
})

t.test('DST fall back (Europe/Berlin, 2025-10-26 03:00 → 02:00)', async (t) => {
  // a fixed-time job whose time occurs twice runs once, at the first occurrence
  t.same(ticks('0 30 2 * * *', 'Europe/Berlin', '2025-10-25T12:00:00Z', 2), [
    '2025-10-26T00:30:00.000Z',
    '2025-10-27T01:30:00.000Z',
  ])
  // an interval job runs at both occurrences of the repeated hour (different instants): 02:00 and 02:30 twice
  t.same(ticks('0 */30 * * * *', 'Europe/Berlin', '2025-10-26T00:10:00Z', 5), [
    '2025-10-26T00:30:00.000Z',
    '2025-10-26T01:00:00.000Z',
    '2025-10-26T01:30:00.000Z',
    '2025-10-26T02:00:00.000Z',
    '2025-10-26T02:30:00.000Z',
  ])
})

t.test('tick job ids are UUID v5 of sched:<id>:<tick>', async (t) => {
  t.equal(
    uuidV5('sched:x:1'),
    '75938683-3113-5975-9b53-fe1fe1fbc6f1',
    "same as Python's uuid.uuid5(NAMESPACE_URL, 'sched:x:1')",
  )
  t.equal(tickJobId('a', 1000), tickJobId('a', 1000))
  t.not(tickJobId('a', 1000), tickJobId('a', 2000))
  t.match(tickJobId('a', 1000), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
})

t.test('every actor type has its protocol listed for the operators', async (t) => {
  t.equal(
    ACTOR_PROTOCOLS.length,
    ACTOR_FACTORIES.length,
    'actors/protocols/index.ts lists as many types as the features contribute',
  )
  t.same(
    ACTOR_PROTOCOLS.map((p) => p.type),
    ['chat', 'schedule', 'db-trigger', 'pool'],
  )
})

/** Drives the actor's handlers like a host does: one turn at a time, state and timers committed only when the turn returns. */
function harness(fire: (r: ScheduleFire) => Promise<ScheduleFireReply>, clock: { now: number }, maxCatchUp = 100) {
  const actor = scheduleActor({ fire, misfireGraceMs: 60_000, maxCatchUp, now: () => clock.now })
  let state: ScheduleActorState = actor.initialState('s1') as ScheduleActorState
  let timers: Record<string, number> = {}
  const turn = async (body: (ctx: ActorContext<unknown>) => Promise<void>) => {
    let next = state
    const nextTimers = { ...timers }
    const ctx: ActorContext<unknown> = {
      key: 's1',
      state,
      setState: (s) => (next = s as ScheduleActorState),
      setTimer: (name, ms) => (nextTimers[name] = clock.now + ms),
      clearTimer: (name) => delete nextTimers[name],
      fence: 1,
      log: createLogger({ level: 'silent' }),
    }
    await body(ctx) // throws: nothing committed
    state = next
    timers = nextTimers
  }
  return {
    state: () => state,
    timers: () => timers,
    send: (name: string, payload: unknown) => turn((ctx) => actor.handle(ctx, name, payload)),
    fireTimer: () =>
      turn(async (ctx) => {
        ctx.clearTimer('fire')
        await actor.onTimer(ctx, 'fire')
      }),
  }
}

t.test('schedule actor: arms the next tick, keeps it on failure, catches up from the last fired tick', async (t) => {
  const clock = { now: Date.parse('2025-01-01T00:00:00.200Z') }
  const fired: number[] = []
  let failing = false
  const h = harness(async (r) => {
    if (failing) throw new Error('no responders')
    fired.push(r.tick)
    return { ok: true, job_id: tickJobId(r.schedule_id, r.tick), status: 'fired' }
  }, clock)
  await h.send('set', { version: 1, cron_expression: '* * * * * *', timezone: 'UTC', active: true })
  t.equal(iso(h.state().next), '2025-01-01T00:00:01.000Z')
  t.equal(h.timers()['fire'], Date.parse('2025-01-01T00:00:01.000Z'), 'the timer is due at the next tick')

  clock.now = Date.parse('2025-01-01T00:00:01.010Z')
  failing = true
  await t.rejects(h.fireTimer(), 'no service answered')
  t.equal(iso(h.state().next), '2025-01-01T00:00:01.000Z', 'a failed fire leaves the tick due')
  t.equal(h.timers()['fire'], Date.parse('2025-01-01T00:00:01.000Z'))

  // a takeover 3.5 s later: the due tick and the ones missed meanwhile, in order, once each
  failing = false
  clock.now = Date.parse('2025-01-01T00:00:04.500Z')
  await h.fireTimer()
  t.same(fired.map(iso), [
    '2025-01-01T00:00:01.000Z',
    '2025-01-01T00:00:02.000Z',
    '2025-01-01T00:00:03.000Z',
    '2025-01-01T00:00:04.000Z',
  ])
  t.equal(iso(h.state().next), '2025-01-01T00:00:05.000Z')

  // an update that keeps the timing keeps the armed tick; a stale message changes nothing
  await h.send('set', { version: 2, cron_expression: '* * * * * *', timezone: 'UTC', active: true })
  t.equal(iso(h.state().next), '2025-01-01T00:00:05.000Z')
  await h.send('set', { version: 1, cron_expression: '0 0 * * * *', timezone: 'UTC', active: false })
  t.equal(h.state().version, 2, 'an older version is ignored')
  await h.send('remove', { version: 3 })
  t.equal(h.state().next, null)
  t.same(h.timers(), {}, 'removed: no timer')
})

t.test('schedule actor: ticks older than the misfire grace are skipped, a deleted schedule stops', async (t) => {
  const clock = { now: Date.parse('2025-01-01T00:00:00.000Z') }
  const fired: number[] = []
  let gone = false
  const h = harness(async (r) => {
    fired.push(r.tick)
    return gone ? { ok: true, job_id: null, status: 'gone' } : { ok: true, job_id: null, status: 'fired' }
  }, clock)
  await h.send('set', { version: 1, cron_expression: '0 * * * * *', timezone: 'UTC', active: true })
  clock.now = Date.parse('2025-01-01T00:05:30.000Z')
  await h.fireTimer()
  t.same(fired.map(iso), ['2025-01-01T00:05:00.000Z'], 'only the tick within the 60 s grace ran')
  gone = true
  clock.now = Date.parse('2025-01-01T00:06:00.000Z')
  await h.fireTimer()
  t.equal(h.state().active, false)
  t.same(h.timers(), {})
})

t.test('schedule actor: at most SCHEDULE_MAX_CATCHUP overdue ticks per check, the rest at once after', async (t) => {
  const clock = { now: Date.parse('2025-01-01T00:00:00.000Z') }
  const fired: number[] = []
  const h = harness(
    async (r) => {
      fired.push(r.tick)
      return { ok: true, job_id: null, status: 'fired' }
    },
    clock,
    2,
  )
  await h.send('set', { version: 1, cron_expression: '* * * * * *', timezone: 'UTC', active: true })
  clock.now = Date.parse('2025-01-01T00:00:05.500Z')
  await h.fireTimer()
  t.equal(fired.length, 2, 'two ticks in the first check')
  t.equal(h.timers()['fire'], clock.now, 'the timer stays due for the rest')
  await h.fireTimer()
  await h.fireTimer()
  t.same(
    fired.map(iso),
    ['01', '02', '03', '04', '05'].map((x) => `2025-01-01T00:00:${x}.000Z`),
    'each overdue tick once, in order',
  )
})
