import { createServer } from 'node:net'
import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * METRICS_PORT: every process serves `GET /metrics` on a port of its own (src/platform/metrics-server.ts)
 * — a process without the gateway role too — and a gateway's port no longer has it. METRICS_TOKEN
 * applies there as on the gateway.
 */
const TOKEN = 'metrics-port-token'

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.listen(0, '127.0.0.1', () => {
      const a = s.address()
      const port = typeof a === 'object' && a !== null ? a.port : 0
      s.close(() => resolve(port))
    })
    s.on('error', reject)
  })
}

const get = (url: string, token?: string) =>
  fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })

t.test('a process without the gateway role is scraped on METRICS_PORT, behind METRICS_TOKEN', async (t) => {
  const port = await freePort()
  const env = await startTestPlatform(t, {
    ROLES: 'resources,workers,actors',
    METRICS_PORT: String(port),
    METRICS_TOKEN: TOKEN,
  })
  t.equal(env.platform.gateway, undefined, 'no gateway in this process')
  t.equal(env.platform.metricsPort, port)
  const url = `http://127.0.0.1:${String(port)}/metrics`
  const anonymous = await get(url)
  t.equal(anonymous.status, 401)
  t.equal(anonymous.headers.get('www-authenticate'), 'Bearer')
  t.equal((await get(url, 'wrong')).status, 401, 'a wrong token')
  const ok = await get(url, TOKEN)
  t.equal(ok.status, 200)
  t.match(ok.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const text = await ok.text()
  // the host takes its partitions over its first ticks
  await eventually(
    async () =>
      /^agent_platform_actor_partitions_owned\{actor_type="chat"\} [1-9]/m.test(await (await get(url, TOKEN)).text())
        ? true
        : undefined,
    'the actor host owning chat partitions',
  )
  t.pass('the actor host reports')
  t.match(text, /^agent_platform_jobs\{pool="agent",state="completed"\} \d+$/m, 'the resources role reports')
  t.match(text, /^agent_platform_sandboxes\{state="idle"\} \d+$/m, 'the workers role reports')
  t.equal((await get(`http://127.0.0.1:${String(port)}/other`, TOKEN)).status, 404, 'only /metrics')
})

t.test('with METRICS_PORT a gateway no longer serves /metrics on its own port', async (t) => {
  const port = await freePort()
  const env = await startTestPlatform(t, { METRICS_PORT: String(port) })
  t.equal((await get(`${env.base}/metrics`)).status, 404, 'not on the gateway port')
  const ok = await get(`http://127.0.0.1:${String(port)}/metrics`)
  t.equal(ok.status, 200, 'no METRICS_TOKEN: no authentication')
  t.match(await ok.text(), /^agent_platform_sse_streams_open 0$/m)
})
