import type { RequestMeta } from '../api/bind.ts'
import type { RpcReply } from '../api/route.ts'
import type { ChatEvent, ChatRequest, ChatResult } from '../llm/types.ts'
import { streamReply } from '../streaming/channel.ts'
import type { AdapterContext } from './context.ts'
import type { AdapterProvider } from './providers.ts'
import { publishChunk, publishEnd, publishError, streamChannel } from './stream-out.ts'
import {
  ChunkWriter,
  completionId,
  resultCompletion,
  toNeutralMessages,
  toolsFor,
  type ChatCompletionRequest,
} from './wire.ts'
import { within } from './within.ts'
import { dailyBudget } from '../usage/budget.ts'
import { utcDay } from '../usage/day.ts'
import { addCall, emptyEntry } from '../usage/entry.ts'
import { recordUsage } from '../usage/record.ts'

/** The OpenAI request as the neutral LLM request (`tool_choice` approximated by `toolsFor`). */
export function llmRequest(body: ChatCompletionRequest, model: string): ChatRequest {
  const tools = toolsFor(body)
  const maxTokens = body.max_completion_tokens ?? body.max_tokens
  return {
    model,
    messages: toNeutralMessages(body.messages),
    ...(tools.length > 0 ? { tools } : {}),
    ...(body.temperature === undefined || body.temperature === null ? {} : { temperature: body.temperature }),
    ...(maxTokens === undefined || maxTokens === null ? {} : { max_tokens: maxTokens }),
    // the client's structured output, as it sent it (each provider client maps it to its wire)
    ...(body.response_format === undefined || body.response_format === null
      ? {}
      : { response_format: body.response_format }),
  }
}

/**
 * Counts a provider model's call for the caller (no agent, no chat: the usage is recorded alone,
 * src/usage/record.ts); a failure to record is logged, the client still gets its answer.
 */
function meterCall(c: AdapterContext, userId: string, prov: AdapterProvider, model: string) {
  return (done: { usage: ChatResult['usage']; cost?: number | undefined }): void => {
    const base = emptyEntry({
      day: utcDay(new Date()),
      user_id: userId,
      agent: '',
      agent_id: null,
      provider: prov.name,
      model,
    })
    void recordUsage(c.d.db, addCall(base, done)).catch((err: unknown) =>
      c.log.warn({ err, provider: prov.name, model }, 'recording the usage of an adapter completion failed'),
    )
  }
}

/** A completion of a provider model, called directly from this process. */
export async function viaProvider(
  c: AdapterContext,
  userId: string,
  body: ChatCompletionRequest,
  prov: AdapterProvider,
  model: string,
  req: RequestMeta,
): Promise<RpcReply> {
  // the caller's daily token budget, as for a chat message (429 before the provider is called)
  await dailyBudget(c.d.db, c.d.config.USAGE_DAILY_TOKEN_BUDGET).check(userId)
  const meter = meterCall(c, userId, prov, model)
  const llmReq = llmRequest(body, model)
  const client = await c.providers.client(prov)
  if (body.stream !== true) {
    const r = await client.complete(llmReq)
    meter(r)
    return {
      status: 200,
      body: resultCompletion(r, { id: completionId(), created: Math.floor(Date.now() / 1000), model: body.model }),
    }
  }
  const channel = streamChannel(req)
  const chunks = new ChunkWriter(body.model, body.stream_options?.include_usage === true)
  const it = client.stream(llmReq)[Symbol.asyncIterator]()
  // The provider's refusal before its first event is an HTTP error; after that, an error event.
  const first = it.next()
  const early = await within(first, c.firstEventWaitMs)
  void relayProvider(c, channel, chunks, it, early === null ? first : Promise.resolve(early.value), meter).catch(
    (err: unknown) => c.log.warn({ err, channel }, 'adapter stream failed'),
  )
  return streamReply(channel)
}

/** Provider events → chunks on the client's channel: text and tool call deltas, the finish chunk (and usage), or the error. */
export async function relayProvider(
  c: AdapterContext,
  channel: string,
  chunks: ChunkWriter,
  it: AsyncIterator<ChatEvent>,
  first: Promise<IteratorResult<ChatEvent>>,
  meter?: (done: { usage: ChatResult['usage']; cost?: number | undefined }) => void,
): Promise<void> {
  try {
    publishChunk(c, channel, chunks.delta({ role: 'assistant', content: '' }))
    for (let next = await first; next.done !== true; next = await it.next()) {
      const ev = next.value
      if (ev.type === 'text') publishChunk(c, channel, chunks.delta({ content: ev.delta }))
      else if (ev.type === 'tool_call_delta') {
        const fn: { name?: string; arguments?: string } = {}
        if (ev.name !== undefined) fn.name = ev.name
        if (ev.arguments_delta !== undefined) fn.arguments = ev.arguments_delta
        else if (ev.id !== undefined) fn.arguments = ''
        publishChunk(
          c,
          channel,
          chunks.delta({
            tool_calls: [
              {
                index: ev.index,
                ...(ev.id === undefined ? {} : { id: ev.id, type: 'function' as const }),
                function: fn,
              },
            ],
          }),
        )
      } else {
        meter?.(ev)
        publishChunk(c, channel, chunks.delta({}, ev.finish_reason))
        if (chunks.includeUsage) publishChunk(c, channel, chunks.usage(ev.usage))
      }
    }
    await publishEnd(c, channel)
  } catch (err) {
    await publishError(c, channel, err)
  }
}
