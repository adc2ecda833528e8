import type { Subscription } from '@nats-io/transport-node'
import type { TurnResult } from '../chats/turn.ts'
import type { JobWatch } from '../jobs/wait.ts'
import type { Usage } from '../llm/types.ts'
import { EVENT_HEADER } from '../streaming/channel.ts'
import type { AdapterContext } from './context.ts'
import { publishChunk, publishEnd, publishError } from './stream-out.ts'
import { AdapterError, type ChunkDelta, type ChunkWriter } from './wire.ts'
import { within } from './within.ts'

type Json = Record<string, unknown>

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export const approvalNeeded = () =>
  new AdapterError(
    409,
    'the agent wants to call a tool that needs approval, which this API cannot give; use the platform chat API (/agents/{namespace}/{name}/chats) for this agent',
    { code: 'approval_required' },
  )

/**
 * Turn events → chunks: `message` text deltas become content deltas (the agent's own tool calls
 * and tool_start / tool_end stay internal), `done` the finish chunk (and usage), `error` an error
 * event. Should the turn's terminal event not arrive (a worker wired without stream events, a
 * lost connection), the job's outcome ends the stream: the reply's remaining text, or the error.
 */
export async function relayTurn(
  c: AdapterContext,
  channel: string,
  chunks: ChunkWriter,
  sub: Subscription,
  jobId: string,
  watch?: JobWatch,
): Promise<void> {
  let sent = ''
  let terminal: { event: string; data: Json } | null = null
  const outcome = c.svc.result(jobId, watch).then(
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
        if (
          typeof content === 'string' &&
          content !== '' &&
          (data['tool_calls'] === null || data['tool_calls'] === undefined)
        ) {
          sent += content
          publishChunk(c, channel, chunks.delta({ content }))
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
    if (terminal?.event === 'error') {
      const code = String(terminal.data['code'] ?? 'turn.failed')
      // an answer not matching the agent's output_schema is not a provider failure
      throw new AdapterError(
        code === 'agent.output_invalid' ? 422 : 502,
        String(terminal.data['detail'] ?? 'the agent turn failed'),
        { code },
      )
    }
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
        if (terminal === null && text.startsWith(sent) && text.length > sent.length)
          publishChunk(c, channel, chunks.delta({ content: text.slice(sent.length) }))
      }
    }
    if (status === 'awaiting_approval') throw approvalNeeded()
    publishChunk(c, channel, chunks.delta({} satisfies ChunkDelta, status === 'blocked' ? 'content_filter' : 'stop'))
    if (chunks.includeUsage) publishChunk(c, channel, chunks.usage(usage ?? null))
    await publishEnd(c, channel)
  } catch (err) {
    await publishError(c, channel, err)
  }
}
