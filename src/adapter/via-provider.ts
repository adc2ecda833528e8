import type { RequestMeta } from '../api/bind.ts'
import type { RpcReply } from '../api/route.ts'
import type { ChatEvent, ChatRequest } from '../llm/types.ts'
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

/** A completion of a provider model, called directly from this process. */
export async function viaProvider(
  c: AdapterContext,
  body: ChatCompletionRequest,
  prov: AdapterProvider,
  model: string,
  req: RequestMeta,
): Promise<RpcReply> {
  const llmReq = llmRequest(body, model)
  const client = await c.providers.client(prov)
  if (body.stream !== true) {
    const r = await client.complete(llmReq)
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
  void relayProvider(c, channel, chunks, it, early === null ? first : Promise.resolve(early.value)).catch(
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
        publishChunk(c, channel, chunks.delta({}, ev.finish_reason))
        if (chunks.includeUsage) publishChunk(c, channel, chunks.usage(ev.usage))
      }
    }
    await publishEnd(c, channel)
  } catch (err) {
    await publishError(c, channel, err)
  }
}
