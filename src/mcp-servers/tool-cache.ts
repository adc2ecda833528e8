/*
 * A worker's tool lists of remote MCP servers, so a turn does not list them again: an entry is
 * used while younger than MCP_CLIENT_TOOLS_CACHE_SECONDS and while the server record is the same
 * (`version`: its updated_at, so an edit refreshes it), and dropped when the server announces
 * `notifications/tools/list_changed` on a stream this process reads. In memory on purpose: a list
 * is cheap to read again and a stale one only costs a refused call until the TTL ends.
 */
export interface McpToolInfo {
  name: string
  description: string
  inputSchema: Record<string, unknown>
}

export interface ToolListCache {
  get(serverId: string, version: string, ttlMs: number): McpToolInfo[] | undefined
  set(serverId: string, version: string, tools: McpToolInfo[]): void
  invalidate(serverId: string): void
}

export function createToolListCache(max = 1000): ToolListCache {
  const map = new Map<string, { version: string; at: number; tools: McpToolInfo[] }>()
  return {
    get(serverId, version, ttlMs) {
      const e = map.get(serverId)
      if (e === undefined || e.version !== version || Date.now() - e.at >= ttlMs) return undefined
      return e.tools
    },
    set(serverId, version, tools) {
      map.delete(serverId)
      map.set(serverId, { version, at: Date.now(), tools })
      if (map.size > max) map.delete(map.keys().next().value as string)
    },
    invalidate: (serverId) => void map.delete(serverId),
  }
}
