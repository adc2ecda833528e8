import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureConsoleBuild } from '../../src/console/build.ts'
import { startConsoleServer } from '../../src/console/server.ts'
import { createLogger } from '../../src/kernel/log.ts'

/* The console (built once per machine state into a temporary directory) served in front of a test platform. */
export interface TestConsole {
  base: string
}

export async function startTestConsole(t: { teardown(fn: () => unknown): void }, apiUrl: string): Promise<TestConsole> {
  const dir = mkdtempSync(join(tmpdir(), 'console-build-'))
  const log = createLogger({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' })
  const build = await ensureConsoleBuild(join(dir, 'out'), log)
  const server = await startConsoleServer({
    host: '127.0.0.1',
    port: 0,
    dir: build.dir,
    apiUrl,
    apiPublicUrl: '',
    refreshDays: 1,
    trustForwardedProto: false,
    log,
  })
  t.teardown(async () => {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return { base: `http://127.0.0.1:${String(server.port)}` }
}
