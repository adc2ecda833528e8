import type { RequestMeta } from '../api/bind.ts'
import type { RpcReply } from '../api/route.ts'
import type { Principal } from '../auth/principal.ts'
import { seedChat } from '../chats/history-cache.ts'
import type { TurnResult } from '../chats/turn.ts'
import { validateAgainst } from '../functions/json-schema.ts'
import type { Usage } from '../llm/types.ts'
import type { ResourceRecord } from '../resources/service.ts'
import { newChannelId, sseLiveSubject, streamReply } from '../streaming/channel.ts'
import type { AdapterContext } from './context.ts'
import { approvalNeeded, relayTurn } from './relay-turn.ts'
import { publishChunk, streamChannel } from './stream-out.ts'
import {
  AdapterError,
  ChunkWriter,
  completion,
  completionId,
  invalidRequest,
  toNeutralMessages,
  type ChatCompletionRequest,
} from './wire.ts'

type Json = Record<string, unknown>

/** A completion of an agent model: a turn in an internal chat of the caller with the agent. */
export async function viaAgent(
  c: AdapterContext,
  p: Principal,
  body: ChatCompletionRequest,
  agent: ResourceRecord,
  req: RequestMeta,
): Promise<RpcReply> {
  const { d, svc } = c
  // `tools` / `tool_choice` are ignored: an agent calls its own tools and answers with text.
  const messages = toNeutralMessages(body.messages)
  const last = messages.at(-1)
  if (last?.role !== 'user' || last.content === null || last.content === '')
    throw invalidRequest('the last message must be a non-empty user message (the one the agent answers)', 'messages')
  const input = body.input ?? {}
  const issues = validateAgainst((agent['input_schema'] ?? {}) as Json, input, '/input')
  if (issues.length > 0)
    throw new AdapterError(
      422,
      `input does not match the agent's input_schema: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`,
      { param: 'input', code: 'invalid_input' },
    )
  const channel = body.stream === true ? streamChannel(req) : null

  // the chat with the request's earlier messages: one statement
  const earlier = messages.slice(0, -1).map((m) => ({
    role: m.role,
    content: m.content,
    tool_calls: m.tool_calls === undefined ? null : [...m.tool_calls],
    tool_call_id: m.tool_call_id ?? null,
  }))
  const { chat, history } = await svc.store.createInternal({
    userId: p.userId,
    agent: { id: agent.id, namespace: String(agent['namespace']), name: agent.name },
    input,
    expiresIn: c.chatTtl,
    messages: earlier,
  })
  // its turn (most often in this process) then reads nothing
  seedChat({ chat, history, count: history.length })
  if (channel === null) {
    const { jobId, watch } = await svc.submit(p, chat, { content: last.content, channelId: null, fresh: true })
    const out = (await svc.result(jobId, watch)) as TurnResult & { usage?: Usage }
    if (out.status === 'awaiting_approval') throw approvalNeeded()
    return {
      status: 200,
      body: completion({
        id: completionId(),
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        content: out.message?.content ?? '',
        finishReason: out.status === 'blocked' ? 'content_filter' : 'stop',
        usage: out.usage ?? null,
      }),
    }
  }
  // Listen on the turn's channel before the turn can start, then relay it.
  const turnChannel = newChannelId()
  // (subscribed on this connection before the send: the server has the subscription before the
  // turn can start, so no flush is needed)
  const sub = d.nc.subscribe(sseLiveSubject(d.names, turnChannel))
  let sent: Awaited<ReturnType<typeof svc.submit>>
  try {
    sent = await svc.submit(p, chat, { content: last.content, channelId: turnChannel, fresh: true, resumable: false })
  } catch (err) {
    sub.unsubscribe()
    throw err
  }
  const chunks = new ChunkWriter(body.model, body.stream_options?.include_usage === true)
  publishChunk(c, channel, chunks.delta({ role: 'assistant', content: '' }))
  void relayTurn(c, channel, chunks, sub, sent.jobId, sent.watch).catch((err: unknown) =>
    c.log.warn({ err, channel }, 'adapter agent stream failed'),
  )
  return streamReply(channel)
}
