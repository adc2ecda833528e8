import type { Principal } from '../auth/principal.ts'
import { activeFunction, type FunctionRecord } from '../kinds/function/executable.ts'
import { invokeFunction } from '../functions/invoke.ts'
import type { JobState } from '../jobs/job-state.ts'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { ChatRow } from './store.ts'
import type { AgentRecord } from '../feature/tools.ts'
import type { TurnRuntime } from './turn-runtime.ts'

type HookReply = { content?: string; block?: boolean; reply?: string } | null

/** The reply of a message a hook could not check: the user learns that it was stopped, and by which hook. */
export const hookUnavailableReply = (fn: string): string =>
  `This message was not processed: the agent's hook ${fn} could not run.`
/** The reply of a message whose hook raised or timed out with `on_timeout: block`. */
export const hookFailedReply = 'The message could not be checked; please try again.'

/**
 * The hook's function as the chat's caller may run it now, or why not. Hooks run as the chat's
 * caller (like the agent's tools), so a guard never runs with more rights than the person talking.
 */
async function hookFunction(rt: TurnRuntime, p: Principal, ref: string): Promise<FunctionRecord | string> {
  const [ns = '', name = ''] = ref.split('/')
  try {
    return await activeFunction(rt.d.resources, p, ns, name)
  } catch (err) {
    if (err instanceof AppError && (err.status === 404 || err.code === 'function.inactive')) {
      return err.code === 'function.inactive' ? 'inactive' : 'missing or not executable by the chat user'
    }
    throw err
  }
}

/**
 * Runs the hooks of one event in order: async ones fire and forget, sync ones may replace or block.
 * Hooks fail closed: a sync hook that cannot run (its function missing, inactive or not executable
 * by the chat's caller) blocks the message, whatever its `on_timeout`; one that raises or times out
 * blocks with `on_timeout: block` and lets the message pass with `passthrough`. An async hook
 * cannot hold the message back, so one that cannot run or fails is logged (error level).
 */
export async function runHooks(
  rt: TurnRuntime,
  which: 'on_user_message' | 'on_assistant_message',
  p: Principal,
  chat: ChatRow,
  agent: AgentRecord,
  job: JobState,
  message: { role: string; content: string },
  log: Logger,
): Promise<{ content: string } | { block: true; reply: string }> {
  const { d } = rt
  let content = message.content
  for (const hook of agent.hooks[which]) {
    const fn = await hookFunction(rt, p, hook.function)
    if (typeof fn === 'string') {
      log.error(
        { hook: hook.function, event: which, reason: fn, user: p.userId, async: hook.async === true },
        hook.async === true ? 'async hook cannot run' : 'hook cannot run: message blocked',
      )
      if (hook.async === true) continue
      return { block: true, reply: hookUnavailableReply(hook.function) }
    }
    const input = {
      message: { role: message.role, content },
      chat_id: chat.id,
      agent: { namespace: agent.namespace, name: agent.name },
      user_id: chat.user_id,
    }
    const run = invokeFunction(d.invoke, p, fn, {
      input,
      triggerType: 'hook',
      triggerId: `${which}:${chat.id}`,
      chatId: chat.id,
      parent: { id: job.id, depth: job.depth },
    })
    if (hook.async === true) {
      void run.then(
        (out) =>
          out.status === 'success'
            ? undefined
            : log.error(
                {
                  hook: hook.function,
                  event: which,
                  status: out.status,
                  error: out.error,
                  execution_id: out.execution_id,
                },
                'async hook failed',
              ),
        (err: unknown) => log.error({ err, hook: hook.function, event: which }, 'async hook failed'),
      )
      continue
    }
    const out = await run
    if (out.status !== 'success') {
      // a raise and a timeout alike: the hook did not say the message is fine
      const block = hook.on_timeout === 'block'
      log.warn(
        { hook: hook.function, event: which, status: out.status, error: out.error, execution_id: out.execution_id },
        block
          ? 'hook failed: message blocked (on_timeout: block)'
          : 'hook failed: message passes unchanged (on_timeout: passthrough)',
      )
      if (block) return { block: true, reply: hookFailedReply }
      continue
    }
    const r = out.result as HookReply
    if (r !== null && typeof r === 'object') {
      if (r.block === true) return { block: true, reply: typeof r.reply === 'string' ? r.reply : '' }
      if (typeof r.content === 'string') content = r.content
    }
  }
  return { content }
}
