import { startSpan, tracing, type TraceSpan } from '../platform/tracing.ts'
import type { ChatEvent, ChatRequest, ChatResult, LlmClient, ProviderConfig } from './types.ts'

/*
 * Every provider call in a span (tracing on, src/platform/tracing.ts): `chat <model>`, CLIENT, with
 * the GenAI attributes (system, model, tokens, finish reason). The span is current while the
 * client runs, so the outbound request carries it as `traceparent` (transport.ts `postStream`):
 * a provider or a proxy that traces continues the same trace. With tracing off the client's own
 * calls run, behind one check.
 */
export function tracedClient<C extends LlmClient>(client: C, provider: ProviderConfig): C {
  const { stream, complete } = client
  return {
    ...client,
    stream: (req: ChatRequest) => (tracing.on ? tracedStream(stream, provider, req) : stream(req)),
    complete: (req: ChatRequest) => (tracing.on ? tracedComplete(complete, provider, req) : complete(req)),
  }
}

function llmSpan(provider: ProviderConfig, req: ChatRequest, streamed: boolean): TraceSpan | undefined {
  return startSpan(`chat ${req.model}`, {
    kind: 'client',
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': provider.provider_type,
      'gen_ai.request.model': req.model,
      'gen_ai.request.stream': streamed,
      'server.address': provider.api_endpoint ?? undefined,
    },
  })
}

function recordResult(span: TraceSpan, r: Omit<ChatResult, 'content'>): void {
  span.setAttribute('gen_ai.usage.input_tokens', r.usage.prompt_tokens)
  span.setAttribute('gen_ai.usage.output_tokens', r.usage.completion_tokens)
  span.setAttribute('gen_ai.response.finish_reasons', r.finish_reason)
  span.setAttribute('gen_ai.response.tool_calls', r.tool_calls.length)
}

/** The stream with each step run under the span, so the exchange it opens carries it. */
async function* tracedStream(
  stream: LlmClient['stream'],
  provider: ProviderConfig,
  req: ChatRequest,
): AsyncGenerator<ChatEvent, void, undefined> {
  const span = llmSpan(provider, req, true)
  if (span === undefined) {
    yield* stream(req)
    return
  }
  try {
    const it = span.run(() => stream(req)[Symbol.asyncIterator]())
    try {
      for (;;) {
        const step = await span.run(() => it.next())
        if (step.done === true) break
        if (step.value.type === 'done') recordResult(span, step.value)
        yield step.value
      }
    } finally {
      // a consumer that stops early ends the exchange, as breaking out of the client's own loop does
      await it.return?.()
    }
  } catch (err) {
    span.fail(err)
    throw err
  } finally {
    span.end()
  }
}

async function tracedComplete(
  complete: LlmClient['complete'],
  provider: ProviderConfig,
  req: ChatRequest,
): Promise<ChatResult> {
  const span = llmSpan(provider, req, false)
  if (span === undefined) return complete(req)
  try {
    const result = await span.run(() => complete(req))
    recordResult(span, result)
    return result
  } catch (err) {
    span.fail(err)
    throw err
  } finally {
    span.end()
  }
}
