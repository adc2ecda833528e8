import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'

/*
 * deploy/Dockerfile, read statically: no Docker engine runs on this machine, so the image is never
 * built here. What can be checked without building it is checked: the stages, the base image, the
 * user, how dependencies are installed, the health check, and that every file it copies exists
 * and is let through by its ignore file. The health check script itself runs for real.
 */
const ROOT = join(import.meta.dirname, '..', '..')
const DOCKERFILE = join(ROOT, 'deploy', 'Dockerfile')
const IGNORE = join(ROOT, 'deploy', 'Dockerfile.dockerignore')

interface Instruction {
  op: string
  args: string
  line: number
}

interface Stage {
  from: string
  name: string | undefined
  instructions: Instruction[]
}

/** Instructions with continuation lines joined and comments dropped; ARGs before the first FROM applied. */
function parse(text: string): Stage[] {
  const logical: { text: string; line: number }[] = []
  let current: { text: string; line: number } | undefined
  text.split('\n').forEach((raw, i) => {
    const trimmed = raw.trim()
    if (current === undefined && (trimmed === '' || trimmed.startsWith('#'))) return
    if (current !== undefined && trimmed.startsWith('#')) return
    const body = trimmed.endsWith('\\') ? trimmed.slice(0, -1) : trimmed
    if (current === undefined) current = { text: body, line: i + 1 }
    else current.text += ` ${body}`
    if (!trimmed.endsWith('\\')) {
      logical.push(current)
      current = undefined
    }
  })
  const globalArgs = new Map<string, string>()
  const stages: Stage[] = []
  for (const l of logical) {
    const m = /^(\S+)\s*(.*)$/.exec(l.text)
    if (m === null) continue
    const op = (m[1] as string).toUpperCase()
    const args = m[2] as string
    if (op === 'ARG' && stages.length === 0) {
      const [name, value] = args.split('=')
      globalArgs.set(name as string, value ?? '')
      continue
    }
    if (op === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args)
      const image = (f?.[1] ?? args).replace(/\$\{(\w+)\}/g, (_, n: string) => globalArgs.get(n) ?? '')
      stages.push({ from: image, name: f?.[2], instructions: [] })
      continue
    }
    stages.at(-1)?.instructions.push({ op, args, line: l.line })
  }
  return stages
}

const stages = parse(readFileSync(DOCKERFILE, 'utf8'))
const final = stages.at(-1) as Stage
const ops = (s: Stage, op: string) => s.instructions.filter((i) => i.op === op)

t.test('multi-stage, the platform last on Node 20', async (t) => {
  t.ok(stages.length >= 2, `${stages.length} stages`)
  t.match(final.from, /^node:20[.-]/, `the final stage is FROM ${final.from}`)
  t.equal(final.name, 'platform')
  const sandbox = stages.find((s) => s.name === 'sandbox')
  t.ok(sandbox, 'a sandbox stage (the image of Kubernetes sandbox pods)')
  if (sandbox !== undefined) {
    t.ok(
      ops(sandbox, 'COPY').some((c) => /sandbox\/runner\/runner\.py\s+\/runner\/runner\.py/.test(c.args)),
      'the runner at /runner/runner.py, where the pod spec runs it',
    )
    t.ok(
      ops(sandbox, 'RUN').some((r) => /python3/.test(r.args)),
      'python3 installed',
    )
  }
})

t.test('every stage runs as a non-root user, set after its last RUN', async (t) => {
  for (const s of stages) {
    const users = ops(s, 'USER')
    const user = users.at(-1)
    t.ok(user, `stage ${s.name ?? s.from} sets USER`)
    if (user === undefined) continue
    t.notMatch(user.args, /^(root|0)(:|$)/, `stage ${s.name ?? s.from} runs as ${user.args}`)
    const lastRun = ops(s, 'RUN').at(-1)
    if (lastRun !== undefined) t.ok(user.line > lastRun.line, `USER ${user.args} comes after the last RUN`)
  }
})

t.test('the final stage installs production dependencies only, from the lock file', async (t) => {
  const runs = ops(final, 'RUN').map((r) => r.args)
  const npm = runs.filter((r) => /\bnpm\s/.test(r))
  t.ok(
    npm.some((r) => /\bnpm ci\b/.test(r) && /--omit=dev\b/.test(r)),
    'npm ci --omit=dev (exactly the lock file, no dev dependencies)',
  )
  for (const r of npm) {
    t.notMatch(r, /\bnpm (install|i|add)\b/, `no npm install: ${r}`)
    t.notMatch(r, /--include=dev|--production=false/, `no dev dependencies: ${r}`)
  }
  const env = ops(final, 'ENV')
    .map((e) => e.args)
    .join(' ')
  t.match(env, /NODE_ENV=production/, 'NODE_ENV=production')
  // The platform runs TypeScript through tsx at run time, so tsx must survive --omit=dev.
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
    devDependencies: Record<string, string>
    scripts: Record<string, string>
  }
  t.ok(pkg.dependencies['tsx'], 'tsx is a runtime dependency')
  t.notOk(pkg.devDependencies['tsx'], 'tsx is not a dev dependency')
  const cmd = ops(final, 'CMD').at(-1)?.args ?? ''
  t.match(cmd, /"node",\s*"--import",\s*"tsx",\s*"src\/cli\.ts",\s*"start"/, 'CMD is what npm start runs, without npm')
  t.match(pkg.scripts['start'] ?? '', /node --import tsx src\/cli\.ts start/, 'the same command as npm start')
})

t.test('the console is built into the image, where CONSOLE_BUILD_DIR points', async (t) => {
  t.ok(
    ops(final, 'COPY').some((c) => /^console\s/.test(c.args)),
    'the console sources are copied (their hash is the build stamp)',
  )
  const build = ops(final, 'RUN').find((r) => /src\/cli\.ts console-build --out (\S+)/.test(r.args))
  t.ok(build, 'RUN … console-build --out <dir>: built at image build time')
  const dir = /--out (\S+)/.exec(build?.args ?? '')?.[1]
  const env = ops(final, 'ENV')
    .map((e) => e.args)
    .join(' ')
  t.match(env, new RegExp(`CONSOLE_BUILD_DIR=${dir ?? '?'}(\\s|$)`), `CONSOLE_BUILD_DIR=${dir ?? '?'}`)
  t.notMatch(dir ?? '', /^\/data\b/, 'not under DATA_DIR, which a volume hides')
  t.ok(
    (build?.line ?? 0) < (ops(final, 'USER').at(-1)?.line ?? 0),
    'built as root: the running process cannot change it',
  )
})

t.test('a health check on /health', async (t) => {
  const hc = ops(final, 'HEALTHCHECK').at(-1)
  t.ok(hc, 'HEALTHCHECK in the final stage')
  t.match(hc?.args ?? '', /deploy\/healthcheck\.mjs/)
  t.ok(
    ops(final, 'COPY').some((c) => /deploy\/healthcheck\.mjs/.test(c.args)),
    'the script is copied into the image',
  )
  t.match(readFileSync(join(ROOT, 'deploy', 'healthcheck.mjs'), 'utf8'), /\/health\b/)
  t.ok(
    ops(final, 'EXPOSE').some((e) => e.args.includes('8000')),
    'EXPOSE 8000 (PORT)',
  )
})

/** The ignore file's allowlist: a path is sent when the last matching pattern is a `!` one. */
function sentToBuild(path: string): boolean {
  const patterns = readFileSync(IGNORE, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
  let sent = true
  for (const p of patterns) {
    const negate = p.startsWith('!')
    const body = (negate ? p.slice(1) : p).replace(/\/$/, '')
    const re = new RegExp(
      `^${body
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*\*\//g, '(?:.*/)?')
        .replace(/\*/g, '[^/]*')}(?:/.*)?$`,
    )
    if (re.test(path)) sent = negate
  }
  return sent
}

t.test('every COPY source exists and passes the ignore file; secrets and data do not', async (t) => {
  for (const s of stages) {
    for (const c of ops(s, 'COPY')) {
      if (c.args.includes('--from=')) continue
      const parts = c.args.split(/\s+/).filter((p) => !p.startsWith('--'))
      for (const src of parts.slice(0, -1)) {
        t.ok(existsSync(join(ROOT, src)), `${src} exists`)
        t.ok(sentToBuild(src.replace(/^\.\//, '').replace(/\/$/, '')), `${src} is in the build context`)
      }
    }
  }
  for (const p of [
    '.data/secrets.json',
    'node_modules/tsx/package.json',
    '.git/config',
    'tests/run.sh',
    'bench/run.ts',
  ])
    t.notOk(sentToBuild(p), `${p} stays out of the build context`)
})

t.test('deploy/healthcheck.mjs against a real HTTP server', async (t) => {
  let status = 200
  // the gateway's /health, and a console's page (any other path answers index.html there)
  const server = createServer((req, res) => {
    if (req.url === '/') {
      res.writeHead(status, { 'content-type': 'text/html' })
      return void res.end('<!doctype html><title>console</title>')
    }
    res.writeHead(req.url === '/health' ? status : 404, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ status: status === 200 ? 'ok' : 'degraded' }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const port = String((server.address() as AddressInfo).port)
  const run = (env: Record<string, string>) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [join(ROOT, 'deploy', 'healthcheck.mjs')], {
        env: { PATH: process.env['PATH'] ?? '', ...env },
      })
      let out = ''
      child.stdout.on('data', (d: Buffer) => (out += d.toString()))
      child.on('close', (code) => resolve({ code, out }))
    })
  t.equal((await run({ ROLES: 'gateway', PORT: port })).code, 0, '200 from /health: healthy')
  status = 503
  t.equal((await run({ ROLES: 'all', PORT: port })).code, 1, '503 from /health: unhealthy')
  t.equal((await run({ ROLES: 'console', CONSOLE_PORT: port })).code, 1, 'a console answering 503: unhealthy')
  status = 200
  const console = await run({ ROLES: 'console', CONSOLE_PORT: port, PORT: '1' })
  t.equal(console.code, 0, 'ROLES=console: its page on CONSOLE_PORT answers 200')
  t.match(console.out, /^200 \d+ bytes/)
  status = 503
  const none = await run({ ROLES: 'workers', PORT: port })
  t.equal(none.code, 0, 'a process without the gateway role has no HTTP to ask')
  t.match(none.out, /serves no HTTP/)
  server.close()
  t.equal((await run({ ROLES: 'gateway', PORT: port })).code, 1, 'nothing listening: unhealthy')
  t.equal((await run({ ROLES: 'console', CONSOLE_PORT: port })).code, 1, 'no console listening: unhealthy')
})
