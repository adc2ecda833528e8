import type { RpcReply } from '../api/route.ts'
import type { Principal } from '../auth/principal.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import { AppError } from '../kernel/errors.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceRecord } from '../resources/service.ts'
import type { AdapterContext } from './context.ts'
import { mayUseProvider, type AdapterProvider } from './providers.ts'
import {
  AdapterError,
  agentModelId,
  modelNotFound,
  parseModelId,
  providerModelId,
  unixSeconds,
  type ModelObject,
} from './wire.ts'

/** The agent if the caller may chat with it: 404 when invisible, 403 when visible but not chat-able. */
export async function chatAgent(
  c: AdapterContext,
  p: Principal,
  namespace: string,
  name: string,
  model: string,
): Promise<ResourceRecord> {
  const agent = await c.d.resources.get(p, agentKind, { namespace, name }).catch((err: unknown) => {
    if (err instanceof AppError && err.status === 404) return null
    throw err
  })
  if (agent === null || agent['is_active'] === false) throw modelNotFound(model)
  if (
    !canOnResource(p, agentKind, 'chat', { namespace, name, ownerId: (agent['owner_id'] as string | null) ?? null })
  ) {
    throw new AdapterError(403, `You may read agent ${namespace}/${name} but not chat with it`, {
      code: 'permission_denied',
      param: 'model',
    })
  }
  return agent
}

/** The provider and model if the caller may call it; 404 otherwise (providers are admin-only, so invisible). */
export async function providerModel(
  c: AdapterContext,
  p: Principal,
  provider: string,
  model: string,
  id: string,
): Promise<AdapterProvider> {
  const prov = (await c.providers.all()).get(provider)
  if (prov === undefined || !mayUseProvider(p, provider) || !prov.models.includes(model)) throw modelNotFound(id)
  return prov
}

const agentModel = (a: ResourceRecord): ModelObject => ({
  id: agentModelId(String(a['namespace']), a.name),
  object: 'model',
  created: unixSeconds(a['created_at'] as string),
  owned_by: `agent:${String(a['namespace'])}`,
})
const providerModels = (prov: AdapterProvider): ModelObject[] =>
  prov.models.map((m) => ({
    id: providerModelId(prov.name, m),
    object: 'model',
    created: unixSeconds(prov.created_at),
    owned_by: prov.name,
  }))

/** `GET /models/…`: one model the caller may use. */
export async function modelInfo(c: AdapterContext, p: Principal, id: string): Promise<RpcReply> {
  const target = parseModelId(id)
  if (target === null) throw modelNotFound(id)
  if (target.kind === 'agent')
    return { status: 200, body: agentModel(await chatAgent(c, p, target.namespace, target.name, id)) }
  const prov = await providerModel(c, p, target.provider, target.model, id)
  return {
    status: 200,
    body: { id, object: 'model', created: unixSeconds(prov.created_at), owned_by: prov.name } satisfies ModelObject,
  }
}

/** `GET /models`: active agents the caller may chat with, and the models of the providers it may call. */
export async function modelList(c: AdapterContext, p: Principal): Promise<RpcReply> {
  const [agents, provs] = await Promise.all([c.d.resources.list(p, agentKind, { limit: 100_000 }), c.providers.all()])
  const data: ModelObject[] = []
  for (const a of agents.items) {
    if (a['is_active'] === false) continue
    if (
      canOnResource(p, agentKind, 'chat', {
        namespace: String(a['namespace']),
        name: a.name,
        ownerId: (a['owner_id'] as string | null) ?? null,
      })
    )
      data.push(agentModel(a))
  }
  for (const prov of provs.values()) if (mayUseProvider(p, prov.name)) data.push(...providerModels(prov))
  return { status: 200, body: { object: 'list', data } }
}
