import { bind, type BoundRoute, type RouteHandler } from '../api/bind.ts'
import { AppError } from '../kernel/errors.ts'
import type { RouteDef, RpcReply } from '../api/route.ts'
import { adapterContext, type AdapterDeps } from './context.ts'
import { chatAgent, modelInfo, modelList, providerModel } from './models.ts'
import { ADAPTER_ROUTES } from './routes.ts'
import { viaAgent } from './via-agent.ts'
import { viaProvider } from './via-provider.ts'
import { modelNotFound, parseChatRequest, parseModelId, toAdapterError } from './wire.ts'

export type { AdapterDeps } from './context.ts'

/*
 * The OpenAI-compatible adapter's handlers (routes in ./routes.ts, wire in ./wire.ts).
 *
 * Agent models run the agent's turn: an internal ephemeral chat (not listed, not reachable
 * through /chats, hard-deleted after `chatTtlSeconds`) seeded with the request's earlier messages,
 * the last message sent through the chat actor like any chat message (hooks, tools, sub-agents,
 * permissions checked at execution time). Non-stream waits for the turn; stream relays the turn's
 * stream channel to the client's as chat.completion.chunk objects.
 *
 * Provider models call the provider directly from this process (provider settings and clients
 * from memory, see ./providers.ts). A stream answers only after the provider's first event (or
 * `firstEventWaitMs`), so a provider refusing the request is an HTTP error, not a broken stream.
 *
 * Here only the routes are bound; the parts share one `AdapterContext` (./context.ts): models in
 * ./models.ts, provider completions in ./via-provider.ts, agent completions in ./via-agent.ts and
 * ./relay-turn.ts.
 */
export function adapterHandlers(d: AdapterDeps): BoundRoute[] {
  const R = ADAPTER_ROUTES
  const c = adapterContext(d)

  /** Every failure in OpenAI's shape (the rpc server would send the platform's `{detail, code}`). */
  const errorReply = (err: unknown, requestId: string): RpcReply => {
    const e = toAdapterError(err)
    if (e.status >= 500 && e.code === 'internal') c.log.error({ err, requestId }, 'adapter request failed')
    return {
      status: e.status,
      body: e.body(),
      ...(e.status === 401 ? { headers: { 'www-authenticate': 'Bearer' } } : {}),
      // a 429 of the daily token budget says when to come back, as OpenAI's own 429s do
      ...(err instanceof AppError && err.headers !== undefined && e.status === 429 ? { headers: err.headers } : {}),
    }
  }
  const handler = <T extends RouteDef>(route: T, fn: RouteHandler<T>): BoundRoute => bind(route, fn, { errorReply })

  return [
    handler(R.adapterOpenaiModelsList, async ({ principal: p }) => modelList(c, p)),
    handler(R.adapterOpenaiModelsGet, async ({ principal: p, params }) => modelInfo(c, p, params.model_id)),
    handler(R.adapterOpenaiModelsGetPath, async ({ principal: p, params }) =>
      modelInfo(c, p, `${params.owner}/${params.model}`),
    ),
    handler(R.adapterOpenaiChatCompletions, async ({ principal: p, body: raw, request: req }) => {
      const body = parseChatRequest(raw)
      const target = parseModelId(body.model)
      if (target === null) throw modelNotFound(body.model)
      if (target.kind === 'agent')
        return viaAgent(c, p, body, await chatAgent(c, p, target.namespace, target.name, body.model), req)
      return viaProvider(
        c,
        p.userId,
        body,
        await providerModel(c, p, target.provider, target.model, body.model),
        target.model,
        req,
      )
    }),
  ]
}
