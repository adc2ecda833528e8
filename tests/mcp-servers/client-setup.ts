import { loadConfig, type Config } from '../../src/kernel/config.ts'
import { createLogger } from '../../src/kernel/log.ts'
import type { McpDeps, McpServerRecord } from '../../src/mcp-servers/deps.ts'
import { createSessionCache } from '../../src/mcp-servers/session.ts'
import { createToolListCache } from '../../src/mcp-servers/tool-cache.ts'
import { ENCRYPTION_KEY, SECRET_KEY } from '../helpers/env.ts'
import type { LocalTls } from '../helpers/local-https.ts'

/*
 * The MCP client alone, without a platform (client.test.ts, legacy-sse.test.ts): its deps (the
 * settings with the local CA trusted, fresh caches; no database or resource service) and server
 * records at a test server's paths, each with an id and name of its own.
 */
export function mcpClientSetup(
  tls: LocalTls,
  port: number,
  transport: McpServerRecord['transport'],
): {
  deps(over?: Partial<Config>): McpDeps
  server(path: string, over?: Partial<McpServerRecord>): McpServerRecord
} {
  const base = `https://${tls.address}:${String(port)}`
  let n = 0
  return {
    deps(over = {}) {
      const config = {
        ...loadConfig({
          SECRET_KEY,
          ENCRYPTION_KEY,
          OUTBOUND_EXTRA_CA_FILE: tls.certFile,
          DATABASE_PASSWORD: 'unused',
        }),
        ...over,
      }
      return {
        db: undefined as never,
        resources: undefined as never,
        config,
        log: createLogger({ level: 'silent' }),
        toolLists: createToolListCache(),
        sessions: createSessionCache(),
      }
    },
    server(path, over = {}) {
      n++
      return {
        id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
        namespace: 'acme',
        name: `s${String(n)}`,
        owner_id: null,
        is_active: true,
        updated_at: '2026-01-01T00:00:00Z',
        description: '',
        url: `${base}${path}`,
        transport,
        auth: { type: 'none' },
        timeout_seconds: 10,
        max_result_bytes: 65536,
        ...over,
      } as McpServerRecord
    },
  }
}
