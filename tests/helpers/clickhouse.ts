import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/*
 * A real ClickHouse server for the data tests: Debian's `clickhouse-server` (18.16 on bookworm —
 * old, but the real HTTP interface), installed with apt when the tests run as root and it is
 * missing, started as a child process on free ports with a config and data directory of its own
 * in a temporary directory, stopped and removed in teardown. `skip` says why when it cannot run.
 */
interface Teardown {
  teardown(fn: () => unknown): void
}

export interface ClickHouse {
  skip: string | false
  host: string
  port: number
  user: string
  password: string
  /** Runs SQL over HTTP as the admin user (setup and checks). */
  sql(query: string): Promise<string>
  /** Kills the server (SIGKILL) and waits for it to exit: a store that is gone, for outage tests. */
  kill(): Promise<void>
}

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0

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

function ensureInstalled(): string | false {
  if (has('clickhouse-server')) return false
  if (process.getuid?.() !== 0)
    return 'clickhouse-server is missing (install: apt-get install clickhouse-server); not root, so not installed here'
  const r = spawnSync(
    'sh',
    [
      '-c',
      'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clickhouse-server || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clickhouse-server)',
    ],
    { stdio: 'ignore', timeout: 300_000 },
  )
  return r.status === 0 && has('clickhouse-server') ? false : 'clickhouse-server could not be installed with apt'
}

export async function startClickHouse(t: Teardown): Promise<ClickHouse> {
  const password = 'ch-test-password'
  const none = (skip: string): ClickHouse => ({
    skip,
    host: '127.0.0.1',
    port: 0,
    user: 'default',
    password,
    sql: async () => '',
    kill: async () => undefined,
  })
  const missing = ensureInstalled()
  if (missing !== false) return none(missing)
  const dir = mkdtempSync(join(tmpdir(), 'clickhouse-'))
  for (const d of ['data', 'tmp', 'user_files', 'format_schemas']) mkdirSync(join(dir, d), { recursive: true })
  const [httpPort, tcpPort] = [await freePort(), await freePort()]
  writeFileSync(
    join(dir, 'config.xml'),
    `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/server.log</log><errorlog>${dir}/server.err.log</errorlog></logger>
  <http_port>${String(httpPort)}</http_port>
  <tcp_port>${String(tcpPort)}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path>
  <users_config>${dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <uncompressed_cache_size>8589934</uncompressed_cache_size>
  <mlock_executable>false</mlock_executable>
</yandex>
`,
  )
  writeFileSync(
    join(dir, 'users.xml'),
    `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>1000000000</max_memory_usage></default></profiles>
  <users><default><password>${password}</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`,
  )
  // as root the server runs as root in its own directory; the directory must be its to write
  chmodSync(dir, 0o755)
  const child: ChildProcess = spawn('clickhouse-server', [`--config-file=${join(dir, 'config.xml')}`], {
    stdio: 'ignore',
    cwd: dir,
  })
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const ended = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await ended
      clearTimeout(timer)
    }
    rmSync(dir, { recursive: true, force: true })
  })
  const sql = async (query: string): Promise<string> => {
    const res = await fetch(`http://127.0.0.1:${String(httpPort)}/`, {
      method: 'POST',
      body: query,
      headers: { 'X-ClickHouse-User': 'default', 'X-ClickHouse-Key': password },
    })
    const text = await res.text()
    if (res.status !== 200) throw new Error(`clickhouse: ${text}`)
    return text
  }
  const until = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null)
      return none(`clickhouse-server exited with ${String(child.exitCode)} (see ${dir}/server.err.log)`)
    const up = await sql('SELECT 1').then(
      () => true,
      () => false,
    )
    if (up) break
    if (Date.now() > until) return none('clickhouse-server did not answer within 60 s')
    await new Promise((r) => setTimeout(r, 100))
  }
  const kill = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const ended = new Promise((r) => child.once('exit', r))
    child.kill('SIGKILL')
    await ended
  }
  return { skip: false, host: '127.0.0.1', port: httpPort, user: 'default', password, sql, kill }
}
