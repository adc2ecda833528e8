import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids, processTicks, ticksToMicros } from './lib/cpu.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * Declarative config (src/gitops/): 1,000 resources (skills, templates, secrets, and agents
 * referring to the skills) in one platform process (ROLES=all):
 *   baseline      the 1,000 created one by one through the API (POST per resource, in order)
 *   first apply   the same 1,000 (another namespace) as one POST /api/v1/config/apply
 *   no-op apply   the same document again: everything unchanged by checksum
 * "req/s" is resources per second; the CPU columns are per resource. Each case runs once on a
 * fresh namespace (an apply is one request: repeated, it would be a no-op); the no-op apply runs
 * three times, the median reported. The config text is JSON (which is YAML), as a CI job
 * rendering it would send; the timings include the YAML parse of ~100 KiB.
 * Targets: the first apply ≥ 5× the one-by-one rate (`rpsLimit`); the no-op apply takes ≤ 0.1× the
 * first apply's time (req/s ≥ 10× the first apply's: `reference`).
 */
const NAME = 'gitops'
const N = 1000

interface Timed {
  seconds: number
  cpuUs: number
  otherUs: number
}

async function timed(pid: number, helpers: number[], fn: () => Promise<void>): Promise<Timed> {
  const ticks = processTicks(pid)
  const other = helpers.reduce((s, h) => s + processTicks(h), 0)
  const t0 = performance.now()
  await fn()
  return {
    seconds: (performance.now() - t0) / 1000,
    cpuUs: ticksToMicros(processTicks(pid) - ticks),
    otherUs: ticksToMicros(helpers.reduce((s, h) => s + processTicks(h), 0) - other),
  }
}

const row = (label: string, t: Timed, extra: Partial<Row> = {}): Row => ({
  benchmark: NAME,
  case: label,
  requests: N,
  durationS: t.seconds,
  rps: N / t.seconds,
  cpuUsPerReq: t.cpuUs / N,
  otherCpuUsPerReq: t.otherUs / N,
  latencyP50Ms: t.seconds * 1000,
  latencyP99Ms: t.seconds * 1000,
  errors: 0,
  ...extra,
})

/** The 1,000 resources of namespace `ns`, by section, as API bodies. */
function resources(ns: string): { section: string; path: string; body: Record<string, unknown> }[] {
  const out: { section: string; path: string; body: Record<string, unknown> }[] = []
  const quarter = N / 4
  for (let i = 0; i < quarter; i++)
    out.push({
      section: 'secrets',
      path: '/api/v1/secrets',
      body: { namespace: ns, name: `secret-${String(i)}`, description: `secret ${String(i)}`, value: `v-${String(i)}` },
    })
  for (let i = 0; i < quarter; i++)
    out.push({
      section: 'skills',
      path: '/api/v1/skills',
      body: { namespace: ns, name: `skill-${String(i)}`, description: 'house style', content: `# Style ${String(i)}` },
    })
  for (let i = 0; i < quarter; i++)
    out.push({
      section: 'templates',
      path: '/api/v1/templates',
      body: {
        namespace: ns,
        name: `template-${String(i)}`,
        title: 'Hello {{ name }}',
        html_content: `<p>Hi {{ name }} ${String(i)}</p>`,
      },
    })
  for (let i = 0; i < quarter; i++)
    out.push({
      section: 'agents',
      path: '/api/v1/agents',
      body: {
        namespace: ns,
        name: `agent-${String(i)}`,
        system_prompt: `You are agent ${String(i)}.`,
        enabled_skills: [`${ns}/skill-${String(i)}`],
      },
    })
  return out
}

function configText(ns: string): string {
  const bySection = new Map<string, Record<string, unknown>[]>()
  for (const r of resources(ns)) bySection.set(r.section, [...(bySection.get(r.section) ?? []), r.body])
  return JSON.stringify({
    apiVersion: 'platform/v1',
    kind: 'PlatformConfig',
    metadata: { name: 'bench' },
    spec: Object.fromEntries(bySection),
  }) // JSON is YAML
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 2000))

async function run(): Promise<Row[]> {
  const dataDir = tempDir('bench-gitops-')
  let child: ServerChild | undefined
  try {
    process.stderr.write('  starting platform...\n')
    child = await startPlatformChild(dataDir, { SANDBOX_MIN_SIZE: '0', SANDBOX_MIN_IDLE: '0' })
    const { token } = child.info
    if (token === undefined) throw new Error('platform child reported no token')
    const base = `http://127.0.0.1:${String(child.info.port)}`
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const post = async (path: string, body: unknown, status: number) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
      const text = await res.text()
      if (res.status !== status) throw new Error(`${path}: ${String(res.status)} ${text.slice(0, 300)}`)
      return JSON.parse(text) as Record<string, unknown>
    }
    const pid = child.pid
    const helpers = childPids(pid)
    // warm-up: the first writes of a fresh process compile and connect
    for (const r of resources('warm').slice(0, 20)) await post(r.path, r.body, 201)
    const warm = {
      apiVersion: 'platform/v1',
      kind: 'PlatformConfig',
      spec: { skills: [{ namespace: 'warm', name: 'x', content: 'x' }] },
    }
    await post('/api/v1/config/apply', { config: JSON.stringify(warm) }, 200)

    await settle()
    process.stderr.write('  1,000 resources one by one through the API\n')
    const api = await timed(pid, helpers, async () => {
      for (const r of resources('api')) await post(r.path, r.body, 201)
    })
    const text = configText('cfg')
    await settle()
    process.stderr.write(`  first apply (${String(Math.round(text.length / 1024))} KiB)\n`)
    let summary = ''
    const first = await timed(pid, helpers, async () => {
      const out = await post('/api/v1/config/apply', { config: text }, 200)
      summary = JSON.stringify(out['summary'])
    })
    if (!summary.includes(`"created":${String(N)}`)) throw new Error(`first apply: ${summary}`)
    // the first apply's change announcements make every process re-read those rows: a re-apply
    // comes later than that in practice, so the no-op is measured once they settled (median of 3)
    const noops: Timed[] = []
    for (let i = 0; i < 3; i++) {
      await settle()
      process.stderr.write(`  no-op apply ${String(i + 1)}/3\n`)
      noops.push(
        await timed(pid, helpers, async () => {
          const out = await post('/api/v1/config/apply', { config: text }, 200)
          summary = JSON.stringify(out['summary'])
        }),
      )
      if (!summary.includes(`"unchanged":${String(N)}`)) throw new Error(`no-op apply: ${summary}`)
    }
    const noop = [...noops].sort((a, b) => a.seconds - b.seconds)[1] as Timed
    const speedup = api.seconds / first.seconds
    const noopShare = noop.seconds / first.seconds
    return [
      row('1,000 resources created one by one through the API', api, { baseline: true }),
      row('first apply of the same 1,000 as one config', first, {
        rpsLimit: 5,
        checks: [`${speedup.toFixed(1)}× faster (≥5× ${speedup >= 5 ? 'ok' : 'UNDER'})`],
      }),
      row('no-op re-apply of that config (all unchanged)', noop, {
        reference: 'first apply of the same 1,000 as one config',
        rpsLimit: 10,
        checks: [`${noopShare.toFixed(3)}× the first apply (≤0.1× ${noopShare <= 0.1 ? 'ok' : 'OVER'})`],
      }),
    ]
  } finally {
    await child?.stop()
    removeTempDir(dataDir)
  }
}

const bench: Benchmark = {
  name: NAME,
  description: 'first apply of a 1,000-resource config vs 1,000 API creates; a no-op re-apply vs the first apply',
  run,
}
export default bench
