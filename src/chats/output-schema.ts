import { validateAgainst } from '../kernel/json-schema.ts'
import type { ChatMessage, ResponseFormat } from '../llm/types.ts'
import type { AgentRecord } from '../feature/tools.ts'

/*
 * An agent's output_schema: its answers are JSON matching it. The schema is sent to the provider
 * as structured output (`response_format`, mapped per wire by src/llm/), and the final answer is
 * checked here whatever the provider did with it: parsed as JSON (one surrounding code fence is
 * tolerated, as models add them) and validated. The turn retries once with the problem told to the
 * model, then fails with `agent.output_invalid` (src/chats/rounds.ts).
 */

/** The agent's output_schema, or null when it has none (`{}`, the default, accepts anything). */
export function outputSchemaOf(agent: Pick<AgentRecord, 'output_schema'>): Record<string, unknown> | null {
  const s = agent.output_schema as Record<string, unknown> | undefined
  return s === undefined || Object.keys(s).length === 0 ? null : s
}

/**
 * The schema as OpenAI's response_format. Not `strict`: strict mode accepts only a subset of JSON
 * Schema (every property required, additionalProperties false), which an agent's schema need not be.
 */
export function responseFormatFor(
  agent: Pick<AgentRecord, 'namespace' | 'name'>,
  schema: Record<string, unknown>,
): ResponseFormat {
  // OpenAI: the name is [a-zA-Z0-9_-], at most 64 characters
  const name = `${agent.namespace}_${agent.name}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64)
  return { type: 'json_schema', json_schema: { name, schema } }
}

export type OutputCheck = { ok: true; content: string } | { ok: false; problem: string }

const FENCED = /^```[a-zA-Z]*\s*\n([\s\S]*?)\n?```$/

/** The answer checked against the schema: its JSON text (without a code fence) when it matches, else what is wrong. */
export function checkOutput(schema: Record<string, unknown>, text: string): OutputCheck {
  const trimmed = text.trim()
  const json = FENCED.exec(trimmed)?.[1]?.trim() ?? trimmed
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return { ok: false, problem: 'the answer is not valid JSON' }
  }
  const issues = validateAgainst(schema, value, '')
  if (issues.length === 0) return { ok: true, content: json }
  return {
    ok: false,
    problem: issues
      .slice(0, 20)
      .map((i) => `${i.path === '' ? '(root)' : i.path} ${i.message}`)
      .join('; '),
  }
}

/** What the model is told before its one retry: its answer and what was wrong with it. */
export function correction(answer: string, problem: string): ChatMessage[] {
  return [
    { role: 'assistant', content: answer },
    {
      role: 'user',
      content: `Your answer does not match the required output JSON Schema: ${problem}. Answer again with only a JSON value that matches the schema.`,
    },
  ]
}
