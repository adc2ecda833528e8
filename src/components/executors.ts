import { activeFunction } from '../kinds/function/executable.ts'
import { chatService } from '../chats/service.ts'
import type { ChatRow } from '../chats/store.ts'
import { invokeFunction } from '../functions/invoke.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { invalid } from '../kernel/errors.ts'
import { disabledError } from '../../sandbox/executor.ts'
import type { ProxyExecutorFactory } from '../feature/component-proxy.ts'

/*
 * The proxy executors of the two kinds that exist today: functions and agents. Each checks the
 * acting principal's own permission at execution time, exactly as the direct endpoints do
 * (functions/handlers.ts, chats/service.ts). Registered in module.ts; queries and stores register
 * theirs as `componentProxies` of their features (src/feature/component-proxy.ts).
 */
export const functionProxy: ProxyExecutorFactory = (ctx) => {
  const invokeDeps = {
    nc: ctx.nc,
    names: ctx.names,
    config: ctx.config,
    enqueue: ctx.jobs.enqueue,
    store: ctx.jobs.store,
    results: ctx.jobs.results,
  }
  return async ({ principal: p, target: { namespace, name }, body, component }) => {
    const fn = await activeFunction(ctx.resources, p, namespace, name)
    if (fn.shared_pool !== true && ctx.config.SANDBOX_EXECUTOR === 'disabled') throw disabledError()
    const issues = validateAgainst(fn.input_schema, body['input'], '/input')
    if (issues.length > 0)
      throw invalid("input does not match the function's input_schema", issues, 'function.invalid_input')
    const timeout = typeof body['timeout'] === 'number' ? body['timeout'] : undefined
    const out = await invokeFunction(invokeDeps, p, fn, {
      input: body['input'],
      triggerType: 'component',
      triggerId: `${component.namespace}/${component.name}`,
      ...(timeout === undefined ? {} : { timeoutS: timeout }),
    })
    return { body: out.status === 'success' ? { ...out, error: null } : { ...out, result: null } }
  }
}

export const agentProxy: ProxyExecutorFactory = (ctx) => {
  const chats = chatService({
    db: ctx.db,
    nc: ctx.nc,
    js: ctx.js,
    names: ctx.names,
    config: ctx.config,
    resources: ctx.resources,
    jobStore: ctx.jobs.store,
  })
  return async ({ principal: p, target: { namespace, name }, body, component, scope }) => {
    const agent = await chats.agentFor(p, namespace, name)
    const given = typeof body['session_key'] === 'string' ? body['session_key'] : undefined
    // A component never reaches the viewer's other conversations: its session keys live in a
    // space of their own (per component, and per view on a share page).
    const sessionKey = given === undefined ? null : `component:${component.id}:${scope}:${given}`
    let chat: ChatRow | null = null
    if (sessionKey !== null) {
      chat = await chats.store.bySession(p.userId, namespace, name, sessionKey)
      if (chat !== null && body['reset'] === true) {
        await chats.store.update(chat.id, { archived: true })
        chat = null
      }
    }
    const input = body['input'] as Record<string, unknown> | undefined
    const fresh = chat === null
    chat ??= await chats.createChat(p, agent, {
      ...(input === undefined ? {} : { input }),
      sessionKey,
      title: `via component ${component.namespace}/${component.name}`,
    })
    const out = await chats.sendAndWait(p, chat, { content: String(body['message']), fresh })
    return { body: { reply: out.message?.content ?? '', chat_id: chat.id, session_key: given ?? null } }
  }
}
