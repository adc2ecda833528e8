import type { Subscription } from '@nats-io/transport-node'
import { bind, type BoundRoute, type RequestMeta, type RouteHandler } from '../api/bind.ts'
import type { RouteDef, RpcReply } from '../api/route.ts'
import type { Principal } from '../auth/principal.ts'
import { chatService, type ChatHandlerDeps } from '../chats/handlers.ts'
import { ADAPTER_ROUTES } from './routes.ts'
import type { TurnResult } from '../chats/turn.ts'
import { validateAgainst } from '../functions/json-schema.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { ChatEvent, ChatRequest, Usage } from '../llm/types.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceRecord } from '../resources/service.ts'
import { EVENT_HEADER, newChannelId, publishStreamEvent, publishStreamEventNoAck, sseLiveSubject, streamReply } from '../streaming/channel.ts'
import { mayUseProvider, providerDirectory, type AdapterProvider, type ProviderDirectory } from './providers.ts'
import {
  AdapterError,
  ChunkWriter,
  agentModelId,
  completion,
  completionId,
  invalidRequest,
  modelNotFound,
  parseChatRequest,
  parseModelId,
  providerModelId,
  resultCompletion,
  toAdapterError,
  toNeutralMessages,
  toolsFor,
  unixSeconds,
  type ChatCompletionRequest,
  type ChunkDelta,
  type ModelObject,
} from './wire.ts'

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
 */
export interface AdapterDeps extends ChatHandlerDeps {
  log: Logger
  /** Provider directory (default: built here over db/resources, 10 s TTL). */
  providers?: ProviderDirectory
  /** Lifetime of the internal chat an agent completion runs in (default 3600 s). */
  chatTtlSeconds?: number
  /** Longest wait for a provider's first event before a stream is answered anyway (default 10 s). */
  firstEventWaitMs?: number
}

type Json = Record<string, unknown>

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** `p`'s outcome, or null when it takes longer than `ms` (the timer is cleared either way). */
async function within<V>(p: Promise<V>, ms: number): Promise<{ value: V } | null> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p.then((value) => ({ value })), new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

export function adapterHandlers(d: AdapterDeps): BoundRoute[] {
  const R = ADAPTER_ROUTES
  const svc = chatService(d)
  const providers = d.providers ?? providerDirectory({ db: d.db, resources: d.resources })
  const chatTtl = d.chatTtlSeconds ?? 3600
  const firstEventWaitMs = d.firstEventWaitMs ?? 10_000
  const log = d.log

  /** Every failure in OpenAI's shape (the rpc server would send the platform's `{detail, code}`). */
  const errorReply = (err: unknown, requestId: string): RpcReply => {
    const e = toAdapterError(err)
    if (e.status >= 500 && e.code === 'internal') log.error({ err, requestId }, 'adapter request failed')
    return { status: e.status, body: e.body(), ...(e.status === 401 ? { headers: { 'www-authenticate': 'Bearer' } } : {}) }
  }
  const handler = <T extends RouteDef>(route: T, fn: RouteHandler<T>): BoundRoute => bind(route, fn, { errorReply })

  // -------------------------------------------------------------------------------------------
  // Models

  /** The agent if the caller may chat with it: 404 when invisible, 403 when visible but not chat-able. */
  const chatAgent = async (p: Principal, namespace: string, name: string, model: string): Promise<ResourceRecord> => {
    const agent = await d.resources.get(p, agentKind, { namespace, name }).catch((err: unknown) => {
      if (err instanceof AppError && err.status === 404) return null
      throw err
    })
    if (agent === null || agent['is_active'] === false) throw modelNotFound(model)
    if (!canOnResource(p, agentKind, 'chat', { namespace, name, ownerId: (agent['owner_id'] as string | null) ?? null })) {
      throw new AdapterError(403, `You may read agent ${namespace}/${name} but not chat with it`, { code: 'permission_denied', param: 'model' })
    }
    return agent
  }

  /** The provider and model if the caller may call it; 404 otherwise (providers are admin-only, so invisible). */
  const providerModel = async (p: Principal, provider: string, model: string, id: string): Promise<AdapterProvider> => {
    const prov = (await providers.all()).get(provider)
    if (prov === undefined || !mayUseProvider(p, provider) || !prov.models.includes(model)) throw modelNotFound(id)
    return prov
  }

  const agentModel = (a: ResourceRecord): ModelObject => ({ id: agentModelId(String(a['namespace']), a.name), object: 'model', created: unixSeconds(a['created_at'] as string), owned_by: `agent:${String(a['namespace'])}` })
  const providerModels = (prov: AdapterProvider): ModelObject[] => prov.models.map((m) => ({ id: providerModelId(prov.name, m), object: 'model', created: unixSeconds(prov.created_at), owned_by: prov.name }))

  const modelInfo = async (p: Principal, id: string): Promise<RpcReply> => {
    const target = parseModelId(id)
    if (target === null) throw modelNotFound(id)
    if (target.kind === 'agent') return { status: 200, body: agentModel(await chatAgent(p, target.namespace, target.name, id)) }
    const prov = await providerModel(p, target.provider, target.model, id)
    return { status: 200, body: { id, object: 'model', created: unixSeconds(prov.created_at), owned_by: prov.name } satisfies ModelObject }
  }

  // -------------------------------------------------------------------------------------------
  // Provider models

  const llmRequest = (body: ChatCompletionRequest, model: string): ChatRequest => {
    const tools = toolsFor(body)
    const maxTokens = body.max_completion_tokens ?? body.max_tokens
    return {
      model,
      messages: toNeutralMessages(body.messages),
      ...(tools.length > 0 ? { tools } : {}),
      ...(body.temperature === undefined || body.temperature === null ? {} : { temperature: body.temperature }),
      ...(maxTokens === undefined || maxTokens === null ? {} : { max_tokens: maxTokens }),
    }
  }

  const viaProvider = async (body: ChatCompletionRequest, prov: AdapterProvider, model: string, req: RequestMeta): Promise<RpcReply> => {
    const llmReq = llmRequest(body, model)
    const client = await providers.client(prov)
    if (body.stream !== true) {
      const r = await client.complete(llmReq)
      return { status: 200, body: resultCompletion(r, { id: completionId(), created: Math.floor(Date.now() / 1000), model: body.model }) }
    }
    const channel = streamChannel(req)
    const chunks = new ChunkWriter(body.model, body.stream_options?.include_usage === true)
    const it = client.stream(llmReq)[Symbol.asyncIterator]()
    // The provider's refusal before its first event is an HTTP error; after that, an error event.
    const first = it.next()
    const early = await within(first, firstEventWaitMs)
    void relayProvider(channel, chunks, it, early === null ? first : Promise.resolve(early.value)).catch((err: unknown) => log.warn({ err, channel }, 'adapter stream failed'))
    return streamReply(channel)
  }

  const publishChunk = (channel: string, data: unknown) => publishStreamEventNoAck(d.nc, d.names, channel, { event: 'chunk', data })
  const publishEnd = (channel: string) => publishStreamEvent(d.js, d.names, channel, { event: 'done', data: null })
  const publishError = (channel: string, err: unknown) => publishStreamEvent(d.js, d.names, channel, { event: 'error', data: toAdapterError(err).body() })

  async function relayProvider(channel: string, chunks: ChunkWriter, it: AsyncIterator<ChatEvent>, first: Promise<IteratorResult<ChatEvent>>): Promise<void> {
    try {
      publishChunk(channel, chunks.delta({ role: 'assistant', content: '' }))
      for (let next = await first; next.done !== true; next = await it.next()) {
        const ev = next.value
        if (ev.type === 'text') publishChunk(channel, chunks.delta({ content: ev.delta }))
        else if (ev.type === 'tool_call_delta') {
          const fn: { name?: string; arguments?: string } = {}
          if (ev.name !== undefined) fn.name = ev.name
          if (ev.arguments_delta !== undefined) fn.arguments = ev.arguments_delta
          else if (ev.id !== undefined) fn.arguments = ''
          publishChunk(channel, chunks.delta({ tool_calls: [{ index: ev.index, ...(ev.id === undefined ? {} : { id: ev.id, type: 'function' as const }), function: fn }] }))
        } else {
          publishChunk(channel, chunks.delta({}, ev.finish_reason))
          if (chunks.includeUsage) publishChunk(channel, chunks.usage(ev.usage))
        }
      }
      await publishEnd(channel)
    } catch (err) {
      await publishError(channel, err)
    }
  }

  const streamChannel = (req: RequestMeta): string => {
    if (req.streamChannelId === undefined) throw invalidRequest('stream: true needs the gateway stream channel (call this route through the gateway)', 'stream')
    return req.streamChannelId
  }

  // -------------------------------------------------------------------------------------------
  // Agent models

  const viaAgent = async (p: Principal, body: ChatCompletionRequest, agent: ResourceRecord, req: RequestMeta): Promise<RpcReply> => {
    // `tools` / `tool_choice` are ignored: an agent calls its own tools and answers with text.
    const messages = toNeutralMessages(body.messages)
    const last = messages.at(-1)
    if (last?.role !== 'user' || last.content === null || last.content === '') throw invalidRequest('the last message must be a non-empty user message (the one the agent answers)', 'messages')
    const input = body.input ?? {}
    const issues = validateAgainst((agent['input_schema'] ?? {}) as Json, input, '/input')
    if (issues.length > 0) throw new AdapterError(422, `input does not match the agent's input_schema: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`, { param: 'input', code: 'invalid_input' })
    const channel = body.stream === true ? streamChannel(req) : null

    const chat = await svc.store.create({ userId: p.userId, agent: { id: agent.id, namespace: String(agent['namespace']), name: agent.name }, input, internal: true, expiresIn: chatTtl })
    for (const m of messages.slice(0, -1)) {
      await svc.store.append(chat.id, { role: m.role, content: m.content, tool_calls: m.tool_calls === undefined ? null : [...m.tool_calls], tool_call_id: m.tool_call_id ?? null })
    }
    if (channel === null) {
      const jobId = await svc.send(p, chat, { content: last.content, channelId: null })
      const out = (await svc.result(jobId)) as TurnResult & { usage?: Usage }
      if (out.status === 'awaiting_approval') throw approvalNeeded()
      return {
        status: 200,
        body: completion({ id: completionId(), created: Math.floor(Date.now() / 1000), model: body.model, content: out.message?.content ?? '', finishReason: out.status === 'blocked' ? 'content_filter' : 'stop', usage: out.usage ?? null }),
      }
    }
    // Listen on the turn's channel before the turn can start, then relay it.
    const turnChannel = newChannelId()
    const sub = d.nc.subscribe(sseLiveSubject(d.names, turnChannel))
    let jobId: string
    try {
      await d.nc.flush()
      jobId = await svc.send(p, chat, { content: last.content, channelId: turnChannel })
    } catch (err) {
      sub.unsubscribe()
      throw err
    }
    const chunks = new ChunkWriter(body.model, body.stream_options?.include_usage === true)
    publishChunk(channel, chunks.delta({ role: 'assistant', content: '' }))
    void relayTurn(channel, chunks, sub, jobId).catch((err: unknown) => log.warn({ err, channel }, 'adapter agent stream failed'))
    return streamReply(channel)
  }

  const approvalNeeded = () =>
    new AdapterError(409, 'the agent wants to call a tool that needs approval, which this API cannot give; use the platform chat API (/agents/{namespace}/{name}/chats) for this agent', { code: 'approval_required' })

  /**
   * Turn events → chunks: `message` text deltas become content deltas (the agent's own tool calls
   * and tool_start / tool_end stay internal), `done` the finish chunk (and usage), `error` an error
   * event. Should the turn's terminal event not arrive (a worker wired without stream events, a
   * lost connection), the job's outcome ends the stream: the reply's remaining text, or the error.
   */
  async function relayTurn(channel: string, chunks: ChunkWriter, sub: Subscription, jobId: string): Promise<void> {
    let sent = ''
    let terminal: { event: string; data: Json } | null = null
    const outcome = svc.result(jobId).then(
      (r) => ({ ok: true as const, r: r as TurnResult & { usage?: Usage } }),
      (err: unknown) => ({ ok: false as const, err }),
    )
    // the job ended: give its terminal event a moment, then stop listening
    void outcome.then(() => sleep(1_000)).then(() => sub.unsubscribe())
    try {
      for await (const m of sub) {
        const event = m.headers?.get(EVENT_HEADER) ?? ''
        let data: Json
        try {
          data = (m.json<Json | null>() ?? {}) as Json
        } catch {
          continue
        }
        if (event === 'message') {
          const content = data['content']
          if (typeof content === 'string' && content !== '' && (data['tool_calls'] === null || data['tool_calls'] === undefined)) {
            sent += content
            publishChunk(channel, chunks.delta({ content }))
          }
        } else if (event === 'done' || event === 'error') {
          terminal = { event, data }
          break
        }
      }
    } finally {
      sub.unsubscribe()
    }
    try {
      if (terminal?.event === 'error') throw new AdapterError(502, String(terminal.data['detail'] ?? 'the agent turn failed'), { code: String(terminal.data['code'] ?? 'turn.failed') })
      let status = terminal === null ? null : String(terminal.data['status'] ?? 'completed')
      let usage = terminal === null ? undefined : (terminal.data['usage'] as Usage | undefined)
      if (terminal === null || (chunks.includeUsage && usage === undefined)) {
        // the job's outcome: always when the terminal event is missing, for usage only briefly
        const o = terminal === null ? await outcome : ((await within(outcome, 2_000))?.value ?? null)
        if (o !== null) {
          if (!o.ok) throw o.err
          status ??= o.r.status
          usage ??= o.r.usage
          const text = o.r.message?.content ?? ''
          if (terminal === null && text.startsWith(sent) && text.length > sent.length) publishChunk(channel, chunks.delta({ content: text.slice(sent.length) }))
        }
      }
      if (status === 'awaiting_approval') throw approvalNeeded()
      publishChunk(channel, chunks.delta({} satisfies ChunkDelta, status === 'blocked' ? 'content_filter' : 'stop'))
      if (chunks.includeUsage) publishChunk(channel, chunks.usage(usage ?? null))
      await publishEnd(channel)
    } catch (err) {
      await publishError(channel, err)
    }
  }

  // -------------------------------------------------------------------------------------------

  return [
    handler(R.adapterOpenaiModelsList, async ({ principal: p }) => {
        const [agents, provs] = await Promise.all([d.resources.list(p, agentKind, { limit: 100_000 }), providers.all()])
        const data: ModelObject[] = []
        for (const a of agents.items) {
          if (a['is_active'] === false) continue
          if (canOnResource(p, agentKind, 'chat', { namespace: String(a['namespace']), name: a.name, ownerId: (a['owner_id'] as string | null) ?? null })) data.push(agentModel(a))
        }
        for (const prov of provs.values()) if (mayUseProvider(p, prov.name)) data.push(...providerModels(prov))
        return { status: 200, body: { object: 'list', data } }
      }),
    handler(R.adapterOpenaiModelsGet, async ({ principal: p, params }) => modelInfo(p, params.model_id)),
    handler(R.adapterOpenaiModelsGetPath, async ({ principal: p, params }) => modelInfo(p, `${params.owner}/${params.model}`)),
    handler(R.adapterOpenaiChatCompletions, async ({ principal: p, body: raw, request: req }) => {
        const body = parseChatRequest(raw)
        const target = parseModelId(body.model)
        if (target === null) throw modelNotFound(body.model)
        if (target.kind === 'agent') return viaAgent(p, body, await chatAgent(p, target.namespace, target.name, body.model), req)
        return viaProvider(body, await providerModel(p, target.provider, target.model, body.model), target.model, req)
      }),
  ]
}
