import { agentKind } from '../kinds/agent/kind.ts'
import type { ResourceService } from '../resources/service.ts'
import type { AgentRecord } from '../feature/tools.ts'

/**
 * The chat's agent, if it still exists and is active (the platform's own read: the turn checks
 * `chat` permission itself). A copy of the shared record of the row cache, so the turn's object is
 * its own: per-turn lookups are keyed by it (src/chats/tools.ts ownerNamespaces) and must not
 * outlive the turn.
 */
export async function loadAgent(resources: ResourceService, id: string): Promise<AgentRecord | null> {
  const agent = await resources.byId(agentKind, id)
  return agent === null || agent.is_active === false ? null : ({ ...agent } as AgentRecord)
}
