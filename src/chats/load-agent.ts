import { agentKind } from '../kinds/agent/kind.ts'
import type { ResourceService } from '../resources/service.ts'
import type { AgentRecord } from './tools.ts'

/** The chat's agent, if it still exists and is active (the platform's own read: the turn checks `chat` permission itself). */
export async function loadAgent(resources: ResourceService, id: string): Promise<AgentRecord | null> {
  const agent = await resources.byId(agentKind, id)
  return agent === null || agent.is_active === false ? null : (agent as AgentRecord)
}
