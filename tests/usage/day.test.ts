import t from 'tap'
import { budgetVerdict } from '../../src/usage/budget.ts'
import { daysBetween, nextUtcMidnight, parseDay, utcDay } from '../../src/usage/day.ts'
import { addCall, emptyEntry } from '../../src/usage/entry.ts'
import { totalsOf } from '../../src/usage/report.ts'

/*
 * The daily budget's date logic with a given clock (no waiting for midnight): the UTC day, its
 * end, the verdict before and after the budget is reached and on the next day; calendar dates;
 * how a call's usage and cost add up.
 */

t.test('the UTC day and its end, whatever the local offset of the instant', async (t) => {
  t.equal(utcDay(new Date('2026-12-05T23:59:59.999Z')), '2026-12-05')
  t.equal(utcDay(new Date('2026-12-06T00:00:00.000Z')), '2026-12-06')
  // 01:30 in UTC+02:00 is still the previous UTC day
  t.equal(utcDay(new Date('2026-12-06T01:30:00+02:00')), '2026-12-05')
  t.equal(nextUtcMidnight(new Date('2026-12-05T13:14:15Z')).toISOString(), '2026-12-06T00:00:00.000Z')
  t.equal(nextUtcMidnight(new Date('2026-12-31T23:00:00Z')).toISOString(), '2027-01-01T00:00:00.000Z')
  t.equal(nextUtcMidnight(new Date('2028-02-28T10:00:00Z')).toISOString(), '2028-02-29T00:00:00.000Z')
  // midnight itself belongs to the new day, which ends a day later
  t.equal(nextUtcMidnight(new Date('2026-12-06T00:00:00Z')).toISOString(), '2026-12-07T00:00:00.000Z')
})

t.test('the budget verdict: under, at, over, none, and the next day', async (t) => {
  const noon = new Date('2026-12-05T12:00:00Z')
  t.equal(budgetVerdict(99, 100, noon), null, 'under the budget')
  t.equal(budgetVerdict(1_000_000, 0, noon), null, '0 is no budget')
  const at = budgetVerdict(100, 100, noon)
  t.ok(at, 'reaching the budget exhausts it')
  t.equal(at?.status, 429)
  t.equal(at?.code, 'usage.daily_budget_exhausted')
  t.match(at?.message, /100 tokens/, 'the detail names the budget')
  t.match(at?.message, /2026-12-06T00:00:00\.000Z/, 'and when it resets')
  t.same(at?.headers, { 'retry-after': String(12 * 3600) }, 'Retry-After: the seconds until 00:00 UTC')
  const late = budgetVerdict(150, 100, new Date('2026-12-05T23:59:59.600Z'))
  t.same(late?.headers, { 'retry-after': '1' }, 'never less than one second')
  // what the day spent is read for the clock's own day: the next day starts from nothing
  const tomorrow = new Date('2026-12-06T00:00:01Z')
  t.not(utcDay(noon), utcDay(tomorrow), 'the next UTC day is another row')
  t.equal(budgetVerdict(0, 100, tomorrow), null, 'a new day starts under the budget')
})

t.test('calendar dates: real dates only, and the span between them', async (t) => {
  t.equal(parseDay('2026-02-28')?.toISOString(), '2026-02-28T00:00:00.000Z')
  t.equal(parseDay('2026-02-29'), null, 'no 29 February in 2026')
  t.equal(parseDay('2028-02-29')?.toISOString(), '2028-02-29T00:00:00.000Z')
  t.equal(parseDay('2026-13-01'), null)
  t.equal(parseDay('2026-1-01'), null)
  t.equal(parseDay('yesterday'), null)
  t.equal(daysBetween(parseDay('2026-01-01') as Date, parseDay('2026-12-31') as Date), 364)
  t.equal(daysBetween(parseDay('2026-03-02') as Date, parseDay('2026-03-01') as Date), -1)
})

t.test('calls add up; the cost stays null until a provider reports one', async (t) => {
  const base = emptyEntry({
    day: '2026-12-05',
    user_id: '00000000-0000-0000-0000-000000000001',
    agent: 'ns/a',
    agent_id: null,
    provider: 'p',
    model: 'm',
  })
  const one = addCall(base, { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })
  t.equal(one.cost, null, 'no cost reported: null, not 0')
  const two = addCall(one, { usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }, cost: 0.25 })
  t.same(
    { p: two.prompt_tokens, c: two.completion_tokens, t: two.total_tokens, cost: two.cost, calls: two.calls },
    { p: 11, c: 7, t: 18, cost: 0.25, calls: 2 },
  )
  t.equal(base.calls, 0, 'the base is not changed')
  const row = { day: null, user_id: null, agent: null, agent_id: null, provider: null, model: null }
  t.same(
    totalsOf([
      { ...row, prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cost: null, calls: 1 },
      { ...row, prompt_tokens: 4, completion_tokens: 5, total_tokens: 9, cost: 0.5, calls: 2 },
    ]),
    { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12, cost: 0.5, calls: 3 },
  )
  t.same(totalsOf([]).cost, null)
})
