import type { Caller } from '../auth/caller.ts'
import type { RouteDef } from '../api/route.ts'
import { CHAT_ROUTES } from '../chats/routes.ts'
import { DATA_ROUTES } from '../data/routes.ts'
import { FUNCTION_ROUTES } from '../functions/routes.ts'
import { functionKind } from '../kinds/function/kind.ts'
import type { ResourceService } from '../resources/service.ts'
import { RPC_ERROR, RpcFault } from './jsonrpc.ts'
import { callRoute, type RouteCallDeps } from './route-call.ts'
import { functionInputSchema, parseToolName, type ToolTarget } from './tools.ts'

/*
 * tools/call: the tool's route answers it (route-call.ts) — POST /functions/{ns}/{name}/execute,
 * POST /queries/{ns}/{name}/execute, POST /agents/{ns}/{name}/invoke — so running a tool is
 * running it through the API, permission checks at execution time included. Their answers become
 * a tool result; what the tool itself reports as failed (the function raised or timed out, a
 * query the database refused, a turn that failed) is a result with `isError: true`. A tool that
 * does not exist or the caller may no longer use (the route's 404) and arguments off its schema
 * (the route's 422 on input) are JSON-RPC errors (-32602).
 */
export interface CallDeps extends RouteCallDeps {
  resources: Pick<ResourceService, 'loadMany'>
  /** The longest wait for a tool's route (the gateway's own RPC timeout bounds a call without a stream). */
  timeoutMs: number
}

export interface ToolResult {
  content: { type: 'text'; text: string }[]
  structuredContent?: Record<string, unknown>
  isError: boolean
}

const text = (t: string, isError = false, structured?: unknown): ToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(typeof structured === 'object' && structured !== null && !Array.isArray(structured)
    ? { structuredContent: structured as Record<string, unknown> }
    : {}),
  isError,
})

const json = (v: unknown): string => JSON.stringify(v ?? null)

type Json = Record<string, unknown>

/** The routes' refusals of the input: the arguments did not match the tool's schema. */
const INVALID_INPUT: ReadonlySet<string> = new Set([
  'request.invalid',
  'function.invalid_input',
  'query.invalid_input',
  'query.missing_parameter',
  'chat.invalid_input',
])

const unknownTool = (name: string): RpcFault => new RpcFault(RPC_ERROR.invalidParams, `Unknown tool: ${name}`)

/** The route, its path parameters and body for a call of `target` with `args`. */
async function request(d: CallDeps, target: ToolTarget, args: Json): Promise<{ route: RouteDef; body: Json }> {
  if (target.kind === 'fn') {
    // the input schema the tool was listed with says whether the arguments are the input or wrap it
    const [fn] = await d.resources.loadMany(functionKind, [`${target.namespace}/${target.name}`])
    const wrapped = fn !== undefined && functionInputSchema(fn['input_schema']).wrapped
    return { route: FUNCTION_ROUTES.functionsExecute, body: { input: wrapped ? args['input'] : args } }
  }
  if (target.kind === 'query') return { route: DATA_ROUTES.execute, body: { input: args } }
  const message = args['message']
  if (typeof message !== 'string' || message === '')
    throw new RpcFault(RPC_ERROR.invalidParams, 'an agent tool takes a non-empty string `message`')
  const input = args['input']
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input)))
    throw new RpcFault(RPC_ERROR.invalidParams, "`input` must be an object (the agent's input variables)")
  return { route: CHAT_ROUTES.agentsInvoke, body: { message, ...(input === undefined ? {} : { input }) } }
}

/** The route's answer as a tool result. */
function toResult(target: ToolTarget, status: number, body: unknown, name: string): ToolResult {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Json
  if (status === 404) throw unknownTool(name)
  if (status === 422 && typeof b['code'] === 'string' && INVALID_INPUT.has(b['code']))
    throw new RpcFault(RPC_ERROR.invalidParams, `Invalid arguments for ${name}: ${String(b['detail'])}`, b['errors'])
  if (status !== 200) return text(`${String(b['detail'] ?? 'failed')} (${String(b['code'] ?? status)})`, true)
  if (target.kind === 'fn') {
    if (b['status'] !== 'success')
      return text(String(b['error'] ?? b['status']), true, {
        execution_id: b['execution_id'],
        status: b['status'],
        error: b['error'],
      })
    return text(json(b['result']), false, b['result'])
  }
  if (target.kind === 'query') return text(json(b['rows']), false, b)
  return text(String(b['reply'] ?? ''), false, { reply: b['reply'], chat_id: b['chat_id'] })
}

/** Runs one tools/call for `caller`; `namespace` limits it to that namespace (/mcp/{namespace}). */
export async function callTool(
  d: CallDeps,
  caller: Caller | null,
  requestId: string,
  name: string,
  args: Json,
  namespace: string | undefined,
): Promise<ToolResult> {
  const target = parseToolName(name)
  if (target === null || (namespace !== undefined && target.namespace !== namespace)) throw unknownTool(name)
  const { route, body } = await request(d, target, args)
  const answer = await callRoute(
    d,
    route,
    { requestId, caller, params: { namespace: target.namespace, name: target.name }, body },
    d.timeoutMs,
  )
  return toResult(target, answer.status, answer.body, name)
}
