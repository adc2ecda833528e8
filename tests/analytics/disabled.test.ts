import t from 'tap'
import { analyticsHealth } from '../../src/analytics/health.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * Without ANALYTICS_HOST nothing is collected (the gateway publishes no request record) and the
 * log pages answer empty lists, after the same input checks.
 */
let env: TestPlatform

t.before(async () => {
  env = await startTestPlatform(t)
})

t.test('no analytics store: empty pages, nothing collected', async (t) => {
  for (let i = 0; i < 5; i++) t.equal((await env.request('GET', '/api/v1/agents')).status, 200)
  for (const path of ['/api/v1/request-logs', '/api/v1/execution-logs']) {
    const page = await env.request('GET', `${path}?limit=10`)
    t.equal(page.status, 200, path)
    t.same(page.body, { items: [], total: 0 })
    t.equal((await env.request('GET', `${path}?bogus=1`)).status, 422, `${path}: unknown fields still refused`)
  }
  t.equal(env.platform.gateway?.requestLogsPublished(), 0, 'the gateway collected nothing')
  t.match(analyticsHealth(), { status: 'disabled', dropped: 0, last_error: null })
})
