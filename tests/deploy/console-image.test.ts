import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'

/*
 * The console as the image and the chart run it, without a container engine: the image's build
 * step (`src/cli.ts console-build --out DIR`, as deploy/Dockerfile runs it), then a console-only
 * process started the way the chart's console pod starts it — production mode, ROLES=console,
 * CONSOLE_BUILD_DIR at that build, no NATS, database or secret, a DATA_DIR that does not exist.
 * It must serve the build as it is: write nothing into it (the image's root filesystem is
 * read-only) and nothing into DATA_DIR, and answer the probes' GET / with 200.
 */
const ROOT = join(import.meta.dirname, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'console-image-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const buildDir = join(dir, 'console-build')

/** A child of `node --import tsx src/cli.ts …` in the repository; its output and exit code. */
function cli(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  return { child, output: () => out, exited }
}

/** Every file under `root` with its modification time: to see that nothing was written. */
function snapshot(root: string): Map<string, number> {
  const files = new Map<string, number>()
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) walk(p)
      else files.set(p, statSync(p).mtimeMs)
    }
  }
  walk(root)
  return files
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })

t.test('the image build step: console-build --out DIR', async (t) => {
  const build = cli(['console-build', '--out', buildDir], {})
  t.equal(await build.exited, 0, 'exits 0')
  t.match(build.output(), `console built in ${buildDir}`, 'says where it built')
  t.ok(existsSync(join(buildDir, 'index.html')), 'index.html')
  t.ok(existsSync(join(buildDir, 'build-stamp.json')), 'the stamp')
  const again = cli(['console-build', '--out', buildDir], {})
  t.equal(await again.exited, 0, 'again: exits 0')
  t.match(again.output(), /already built/, 'a second run finds the stamp current')
})

t.test('a console pod: ROLES=console in production, no secret, the image build read as it is', async (t) => {
  const before = snapshot(buildDir)
  const dataDir = join(dir, 'data')
  const port = await freePort()
  const pod = cli(['start'], {
    NODE_ENV: 'production',
    ROLES: 'console',
    HOST: '127.0.0.1',
    CONSOLE_PORT: String(port),
    // nothing listens there: the probes' page does not depend on the gateway
    CONSOLE_API_URL: 'http://127.0.0.1:9',
    CONSOLE_BUILD_DIR: buildDir,
    DATA_DIR: dataDir,
    DOMAIN: 'platform.example.com',
    LOG_LEVEL: 'info',
  })
  t.teardown(() => pod.child.kill('SIGKILL'))
  // up when it says so (or gone with its reason)
  await new Promise<void>((resolve) => {
    const check = () => {
      if (/is up in/.test(pod.output())) resolve()
    }
    pod.child.stdout.on('data', check)
    void pod.exited.then(() => resolve())
    check()
  })
  t.match(pod.output(), /console .* is up in/, 'the console-only process is up')
  const page = await fetch(`http://127.0.0.1:${String(port)}/`)
  t.equal(page.status, 200, 'GET / (the probes): 200')
  const html = await page.text()
  const script = /src="(\/static\/[^"]+\.js)"/.exec(html)?.[1]
  t.ok(script, 'the page names its hashed entry script')
  const js = await fetch(`http://127.0.0.1:${String(port)}${script ?? '/static/none.js'}`)
  t.equal(js.status, 200, `${script ?? '?'} served from the build`)
  await js.arrayBuffer()
  t.notMatch(pod.output(), /console built/, 'nothing built at start')
  t.same(snapshot(buildDir), before, 'the build directory untouched (a read-only one serves)')
  t.notOk(existsSync(dataDir), 'nothing written to DATA_DIR')
  const stamp = JSON.parse(readFileSync(join(buildDir, 'build-stamp.json'), 'utf8')) as { entry: { script: string } }
  t.equal(script, stamp.entry.script, "the page is the image build's")
  pod.child.kill('SIGTERM')
  t.equal(await pod.exited, 0, 'SIGTERM: a clean stop')
})
