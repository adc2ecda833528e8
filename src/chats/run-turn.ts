import { loadPrincipal } from '../auth/principal.ts'
import type { Logger } from '../kernel/log.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import type { JobState } from '../jobs/job-state.ts'
import type { JobContext } from '../jobs/worker.ts'
import { NotClaimed } from '../jobs/run-job.ts'
import { canOnResource } from '../resources/permissions.ts'
import { runHooks } from './hooks.ts'
import { resumeApproval } from './resume-approval.ts'
import { rounds } from './rounds.ts'
import type { ToolContext } from '../feature/tools.ts'
import { loadAgent } from './load-agent.ts'
import type { Emit, ResumeTo, TurnInput, TurnResult } from './turn.ts'
import { TURN_CANCELLED, TurnError } from './turn-error.ts'
import type { TurnRuntime } from './turn-runtime.ts'
import { Transcript } from './transcript.ts'
import type { Held } from './history-cache.ts'

export type TurnJobContext = JobContext & { blocking?: <T>(p: Promise<T>) => Promise<T> }

/** The chat with its last MAX_HISTORY_MESSAGES messages: the one read every turn makes. */
export type TurnContextRead = ReturnType<TurnRuntime['history']['read']>

/**
 * The turn's one read (from the worker's history cache plus what was added since, or whole),
 * started before its job is claimed (`prefetch`) or, without that, by the run. A failure is the
 * run's to report (or nobody's, when the claim finds nothing to run).
 */
export function readTurnContext(rt: TurnRuntime, job: JobState): TurnContextRead {
  const input = job.input as TurnInput
  const read = rt.history.read(input.chat_id, rt.d.config.MAX_HISTORY_MESSAGES, input.message_count)
  read.catch(() => undefined)
  return read
}

/**
 * One turn job: the chat and its agent loaded and the `chat` permission checked again, the
 * message admitted (`beginTurn`), the LLM rounds; whatever happens, the chat actor is told the
 * turn ended and a suspended parent is resumed with this turn's reply or error.
 */
export async function runTurn(rt: TurnRuntime, jc: TurnJobContext): Promise<TurnResult> {
  const { d, store } = rt
  const { job } = jc
  const input = job.input as TurnInput
  // A streamed turn nobody listens to any more is cancelled (after the reconnect window);
  // a synchronous send (no channel) is unaffected.
  const watch =
    input.channel_id === null || d.watchListeners === undefined ? undefined : d.watchListeners(input.channel_id)
  const signal = watch === undefined ? jc.signal : AbortSignal.any([jc.signal, watch.signal])
  // Started while its claim is written (a local start, src/jobs/local-run.ts): the reads, the
  // checks and the provider call go ahead; events, writes, hooks and tools wait for the claim.
  // A refused claim aborts the run, which then leaves no trace (`notOurs` below).
  const ready = jc.claimed
  const emit = ready === undefined ? d.emitter(input.channel_id) : afterClaim(d.emitter(input.channel_id), ready)
  const notOurs = (): boolean => jc.signal.aborted && jc.signal.reason instanceof NotClaimed
  const log = jc.log.child({ chat: input.chat_id })
  const resumeTo = (job.meta ?? {})['resume_to'] as ResumeTo | undefined
  let parentResult: unknown = { error: 'the sub-agent failed' }
  let tx: Transcript | undefined
  /**
   * What the turn's view of the chat accounts for (chats.message_count), while it has been the
   * chat's only writer since its read; told to the chat actor at the end, which vouches for it to
   * the chat's next turn (its read is then none, src/chats/history-cache.ts).
   */
  let held: Held | null = null
  /** Suspended for sub-agents, whose answers are written into this chat from elsewhere. */
  let suspended = false
  try {
    // The chat with its history (one query) and, meanwhile, the sender's principal (a cache
    // read): the sender is the chat's user (the endpoints let only the owner speak in a chat).
    const early = job.user_id === null ? null : loadPrincipal(d.db, { sub: job.user_id, via: 'jwt' })
    early?.catch(() => undefined)
    const row = await ((jc.prefetched as TurnContextRead | undefined) ?? readTurnContext(rt, job))
    if (row === null) throw new TurnError('chat.not_found', 'the chat no longer exists')
    const { chat, history } = row
    // what the turn writes joins the history this worker holds for the chat's next turn
    held = row
    const limit = d.config.MAX_HISTORY_MESSAGES
    tx = new Transcript(
      store,
      chat.id,
      history,
      {
        written: (rows, count) => (held = held === null ? null : rt.history.extend(chat.id, held, rows, limit, count)),
        unknown: () => {
          held = null
          rt.history.drop(chat.id)
        },
      },
      ready,
    )
    // permissions now, not when the message was accepted (the agent comes from the row cache);
    // the daily token budget too: a message queued, scheduled or run as a job before the user's
    // budget ran out spends nothing once it has (one primary-key read, none without a budget)
    const [agent, principal] = await Promise.all([
      loadAgent(d.resources, chat.agent_id),
      early !== null && job.user_id === chat.user_id ? early : loadPrincipal(d.db, { sub: chat.user_id, via: 'jwt' }),
      rt.budget.check(chat.user_id),
    ])
    if (agent === null)
      throw new TurnError('agent.not_found', `agent ${chat.agent_namespace}/${chat.agent_name} no longer exists`)
    if (
      !canOnResource(principal, agentKind, 'chat', {
        namespace: agent.namespace,
        name: agent.name,
        ownerId: agent.owner_id,
      })
    )
      throw new TurnError('auth.forbidden', `not permitted to chat with ${agent.namespace}/${agent.name}`)
    const delegationDepth = Number((job.meta ?? {})['delegation_depth'] ?? 0)
    const ctx: ToolContext = {
      principal,
      chat,
      agent,
      job,
      delegationDepth,
      signal,
      blocking: jc.blocking ?? (<T>(p: Promise<T>) => p),
    }
    // only a plain message without on_user_message hooks starts with nothing anyone could see
    if (
      ready !== undefined &&
      (input.resume === true || input.approval !== undefined || agent.hooks.on_user_message.length > 0)
    )
      await ready
    const ended = await beginTurn(rt, ctx, input, emit, log, tx)
    suspended = ended?.status === 'suspended'
    if (ended !== null) return ended
    const out = await rounds(rt, ctx, emit, log, tx, ready)
    suspended = out.status === 'suspended'
    parentResult = { reply: out.message?.content ?? '' }
    return out
  } catch (caught) {
    if (notOurs()) throw caught
    // Abandoned by its listeners, or its job cancelled (the chat owner's stop, an admin's cancel):
    // whatever the abort broke (the LLM call, a tool), that is the reason. Either way the turn ends
    // below like a failed one: what it added so far is kept, the reply being streamed is not.
    const cancelled =
      jc.signal.aborted && (jc.signal.reason as { code?: unknown } | undefined)?.code === 'job.cancelled'
    const err: unknown =
      watch?.signal.aborted === true && !jc.signal.aborted
        ? new TurnError('chat.stream_abandoned', (watch.signal.reason as Error).message)
        : cancelled
          ? new TurnError(TURN_CANCELLED.code, TURN_CANCELLED.detail)
          : caught
    if (err !== caught)
      log.info(
        { channel: input.channel_id },
        cancelled ? 'turn cancelled' : 'streamed turn cancelled: no client listens',
      )
    parentResult = { error: err instanceof Error ? err.message : String(err) }
    // what the turn added so far (the user message at least) stays in the chat, as before a failure
    await tx?.flush().catch((e: unknown) => log.warn({ err: e }, 'storing the messages of a failed turn failed'))
    const code =
      err instanceof TurnError
        ? err.code
        : typeof (err as { code?: unknown }).code === 'string'
          ? String((err as { code: string }).code)
          : 'turn.failed'
    await emit('error', { detail: err instanceof Error ? err.message : String(err), code }).catch(() => undefined)
    throw err
  } finally {
    watch?.stop()
    // a run whose claim was refused never was this chat's turn: nobody is told it ended
    if (!notOurs()) {
      // not awaited: the turn's result is recorded (and its waiter answered) without waiting for it
      const count = suspended ? undefined : (held as Held | null)?.count
      void d
        .turnEnded(input.chat_id, job.id, count)
        .catch((err: unknown) => log.warn({ err }, 'telling the chat actor the turn ended failed'))
      if (resumeTo !== undefined)
        await d
          .resumeParent(resumeTo, parentResult)
          .catch((err: unknown) => log.warn({ err }, 'resuming the parent turn failed'))
    }
  }
}

/** `emit` once the claim `ready` is held: the first event waits for it, the others go at once. */
function afterClaim(emit: Emit, ready: Promise<void>): Emit {
  let held = false
  return async (event, data) => {
    if (!held) {
      await ready
      held = true
    }
    return emit(event, data)
  }
}

/**
 * What starts the turn: a sub-agent's reply (resume), a tool approval, or the user's message
 * through the on_user_message hooks. Answers the turn's result when it ends here (still waiting
 * for sub-agents, or blocked by a hook), null when the LLM rounds follow.
 */
export async function beginTurn(
  rt: TurnRuntime,
  ctx: ToolContext,
  input: TurnInput,
  emit: Emit,
  log: Logger,
  tx: Transcript,
): Promise<TurnResult | null> {
  const { chat } = ctx
  if (input.resume === true) {
    // Resumed by a sub-agent's reply: go on only when every call of the last round has its result
    // in the history this turn runs on (read with the chat, `tx`) and nothing follows them. A reply
    // stored after that read resumes the chat again (it is written before its resume is sent), so
    // judging by a later read could run the round without it; and a round an earlier resume went
    // on with already ends in the assistant's answer.
    const history = tx.window(Number.MAX_SAFE_INTEGER)
    const lastCalls =
      [...history].reverse().find((m) => m.role === 'assistant' && m.tool_calls !== null)?.tool_calls ?? []
    const answered = new Set(history.filter((m) => m.role === 'tool').map((m) => m.tool_call_id))
    if (history.at(-1)?.role !== 'tool' || lastCalls.some((c) => !answered.has(c.id)))
      return { status: 'suspended', message: null } satisfies TurnResult
  } else if (input.approval !== undefined) {
    await resumeApproval(rt, ctx, input.approval, tx)
  } else {
    const gate = await runHooks(
      rt,
      'on_user_message',
      ctx.principal,
      chat,
      ctx.agent,
      ctx.job,
      { role: 'user', content: input.content ?? '' },
      log,
    )
    if ('block' in gate) {
      tx.add({ role: 'user', content: input.content ?? '' })
      tx.add({ role: 'assistant', content: gate.reply })
      const reply = (await tx.flush()).at(-1) ?? null
      await emit('message', { content: gate.reply, tool_calls: null, finish_reason: 'stop' })
      await emit('done', { status: 'blocked' })
      return { status: 'blocked', message: reply } satisfies TurnResult
    }
    // written with the reply (or before the first tool call): one insert for the whole turn
    tx.add({ role: 'user', content: gate.content })
  }
  return null
}
