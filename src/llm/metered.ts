import { llmCallDuration, llmCalls, llmTokens } from '../platform/metrics.ts'
import type { ChatEvent, ChatRequest, ChatResult, LlmClient, Usage } from './types.ts'

/*
 * Every provider call's metrics (docs/operations.md#metrics): calls by outcome, tokens by
 * direction and latency, labelled by provider type and model. `createLlmClient` (registry.ts), the
 * one place every client of every caller (chat turns, the adapter) is built, wraps each client in
 * this. Models are named by agents and adapter requests, so their number is bounded here: past
 * MAX_MODELS distinct names, a new one is counted as `other`, which keeps the series few whatever
 * callers send.
 */
const MAX_MODELS = 100
const models = new Set<string>()

const modelLabel = (model: string): string => {
  if (models.has(model)) return model
  if (models.size >= MAX_MODELS) return 'other'
  models.add(model)
  return model
}

/** ok: the call ended with its result; error: it failed; cancelled: its caller stopped reading before the end. */
type Outcome = 'ok' | 'error' | 'cancelled'

function record(provider: string, model: string, started: number, outcome: Outcome, usage?: Usage): void {
  const labels = { provider, model }
  llmCalls.inc({ ...labels, outcome })
  llmCallDuration.observe(labels, (performance.now() - started) / 1000)
  if (usage === undefined) return
  llmTokens.inc({ ...labels, direction: 'input' }, usage.prompt_tokens)
  llmTokens.inc({ ...labels, direction: 'output' }, usage.completion_tokens)
}

export function metered<C extends LlmClient>(client: C): C {
  const provider = client.providerType
  async function* stream(req: ChatRequest): AsyncGenerator<ChatEvent> {
    const started = performance.now()
    const model = modelLabel(req.model)
    let outcome: Outcome = 'cancelled'
    let usage: Usage | undefined
    try {
      for await (const event of client.stream(req)) {
        if (event.type === 'done') {
          outcome = 'ok'
          usage = event.usage
        }
        yield event
      }
    } catch (err) {
      outcome = 'error'
      throw err
    } finally {
      // also when the caller breaks out of its loop (the generator's return runs this)
      record(provider, model, started, outcome, usage)
    }
  }
  const complete = async (req: ChatRequest): Promise<ChatResult> => {
    const started = performance.now()
    const model = modelLabel(req.model)
    try {
      const result = await client.complete(req)
      record(provider, model, started, 'ok', result.usage)
      return result
    } catch (err) {
      record(provider, model, started, 'error')
      throw err
    }
  }
  return { ...client, stream, complete }
}
