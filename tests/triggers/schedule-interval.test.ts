import t from 'tap'
import { shortestInterval } from '../../src/kernel/cron.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The minimum interval of a plain user's schedule (SCHEDULE_MIN_INTERVAL_SECONDS, default 60):
 * checked at save over the next runs of the cron expression, 422 `schedule.interval_too_short`
 * naming the minimum; admins (platform.schedules.update:all) are exempt.
 */
t.test('shortestInterval: the smallest gap between consecutive runs, bursts included', async (t) => {
  const at = Date.UTC(2026, 0, 1, 12, 0, 0)
  t.equal(shortestInterval('* * * * * *', 'UTC', at), 1)
  t.equal(shortestInterval('*/30 * * * * *', 'UTC', at), 30)
  t.equal(shortestInterval('* * * * *', 'UTC', at), 60)
  t.equal(shortestInterval('0 9 * * 1-5', 'Europe/Berlin', at), 86_400)
  t.equal(shortestInterval('* * 3 * * *', 'UTC', at), 1, 'every second during hour 3, sampled from noon')
  t.equal(shortestInterval('0,1 0 0 1 1 *', 'UTC', at), 1, 'two runs a second apart once a year')
})

t.test('a plain user below the minimum gets 422 naming it; every minute passes; an admin is exempt', async (t) => {
  const env = await startTestPlatform(t)
  const a = await env.createUser('interval-a@test.local')
  const asA = (method: string, path: string, body?: unknown) =>
    env.request(method, path, { token: a.token, ...(body === undefined ? {} : { body }) })
  t.equal(
    (
      await asA('POST', '/api/v1/functions', {
        namespace: 'iv-a',
        name: 'noop',
        code: 'def handler(input, context):\n    return {}\n',
      })
    ).status,
    201,
  )
  const base = { schedule_type: 'function', target_namespace: 'iv-a', target_name: 'noop' }

  for (const cron of ['* * * * * *', '*/30 * * * * *', '* * 3 * * *', '0,30 * * * * *']) {
    const r = await asA('POST', '/api/v1/schedules', { ...base, name: 'often', cron_expression: cron })
    t.equal(r.status, 422, `${cron} refused`)
    const body = r.body as { code?: string; detail?: string; errors?: { path: string }[] }
    t.equal(body.code, 'schedule.interval_too_short')
    t.match(body.detail, /minimum interval is 60 s/, 'names the minimum')
    t.equal(body.errors?.[0]?.path, '/cron_expression')
  }
  const ok = await asA('POST', '/api/v1/schedules', { ...base, name: 'minutely', cron_expression: '* * * * *' })
  t.equal(ok.status, 201, 'every minute is the minimum itself')
  const patched = await asA('PATCH', '/api/v1/schedules/minutely', { cron_expression: '*/5 * * * * *' })
  t.equal(patched.status, 422, 'a change below the minimum is refused too')
  t.equal((patched.body as { code?: string }).code, 'schedule.interval_too_short')

  // the admin (superadmin token) may run its own every second, and change A's to every 5 s
  t.equal(
    (
      await env.request('POST', '/api/v1/functions', {
        body: { namespace: 'iv-admin', name: 'noop', code: 'def handler(input, context):\n    return {}\n' },
      })
    ).status,
    201,
  )
  t.equal(
    (
      await env.request('POST', '/api/v1/schedules', {
        body: {
          ...base,
          target_namespace: 'iv-admin',
          name: 'every-second',
          cron_expression: '* * * * * *',
          is_active: false,
        },
      })
    ).status,
    201,
    'admin exempt',
  )
  t.equal(
    (
      await env.request('PATCH', `/api/v1/schedules/minutely?owner_id=${a.id}`, {
        body: { cron_expression: '*/5 * * * * *', is_active: false },
      })
    ).status,
    200,
    "admin changes A's",
  )
})

t.test('the setting moves the minimum', async (t) => {
  const env = await startTestPlatform(t, { SCHEDULE_MIN_INTERVAL_SECONDS: '10' })
  const a = await env.createUser('interval-b@test.local')
  const asA = (body: unknown) => env.request('POST', '/api/v1/schedules', { token: a.token, body })
  t.equal(
    (
      await env.request('POST', '/api/v1/functions', {
        token: a.token,
        body: { namespace: 'iv-b', name: 'noop', code: 'def handler(input, context):\n    return {}\n' },
      })
    ).status,
    201,
  )
  const base = { schedule_type: 'function', target_namespace: 'iv-b', target_name: 'noop', is_active: false }
  const r = await asA({ ...base, name: 'five', cron_expression: '*/5 * * * * *' })
  t.equal(r.status, 422)
  t.match((r.body as { detail?: string }).detail, /minimum interval is 10 s/)
  t.equal((await asA({ ...base, name: 'ten', cron_expression: '*/10 * * * * *' })).status, 201)
})
