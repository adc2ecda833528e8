import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { InitializeParams, JsonRpcRequest, ToolsCallParams, ToolsListParams } from '../../schemas/mcp.ts'
import { bind, type BoundRoute, type RequestMeta, type RouteReply } from '../api/bind.ts'
import type { Principal } from '../auth/principal.ts'
import type { Config } from '../kernel/config.ts'
import { streamReply } from '../streaming/channel.ts'
import { callTool, type CallDeps } from './call.ts'
import { RPC_ERROR, RpcFault, rpcError, rpcResult } from './jsonrpc.ts'
import { streamWithProgress, type ProgressDeps } from './progress.ts'
import { originGuard } from './origin.ts'
import { MCP_ROUTES as R } from './routes.ts'
import { listTools } from './tools.ts'
import type { ResourceService } from '../resources/service.ts'

/*
 * POST /mcp: one JSON-RPC message per request (docs/mcp.md). Requests are answered 200 with the
 * JSON-RPC response (a method's failure is a JSON-RPC error in it); notifications and the
 * client's responses 202 with no body; a batch, or an unsupported MCP-Protocol-Version header,
 * 400. No session: nothing is kept between requests (no Mcp-Session-Id), so any replica answers
 * any request; `initialize` only negotiates the protocol version.
 */
export const SUPPORTED_VERSIONS = ['2025-06-18', '2025-03-26'] as const
const LATEST = SUPPORTED_VERSIONS[0]

export interface McpDeps extends CallDeps, ProgressDeps {
  resources: Pick<ResourceService, 'loadMany' | 'all'>
  config: Config
  version: string
}

const checks = {
  initialize: TypeCompiler.Compile(InitializeParams),
  list: TypeCompiler.Compile(ToolsListParams),
  call: TypeCompiler.Compile(ToolsCallParams),
  request: TypeCompiler.Compile(JsonRpcRequest),
}

function paramsOf<S extends TSchema>(check: TypeCheck<S>, params: unknown): Static<S> {
  const value = params ?? {}
  if (!check.Check(value)) {
    const issues = [...check.Errors(value)].slice(0, 10).map((e) => ({ path: e.path, message: e.message }))
    throw new RpcFault(RPC_ERROR.invalidParams, 'Invalid params', issues)
  }
  return value
}

/** tools/list cursors: the last tool name of the page before (base64url), so no page is kept anywhere. */
const encodeCursor = (name: string): string => Buffer.from(name, 'utf8').toString('base64url')
function decodeCursor(cursor: string): string {
  const name = Buffer.from(cursor, 'base64url').toString('utf8')
  if (name === '' || encodeCursor(name) !== cursor) throw new RpcFault(RPC_ERROR.invalidParams, 'Invalid cursor')
  return name
}

/** A JSON-RPC response: no `method`, exactly one of `result` and `error` (the gateway checked the rest). */
function isClientResponse(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || 'method' in body) return false
  return 'result' in body !== 'error' in body
}

const badRequest = (code: number, message: string): RouteReply => ({ status: 400, body: rpcError(null, code, message) })

export function mcpHandlers(d: McpDeps): BoundRoute[] {
  const pageSize = d.config.MCP_TOOLS_PAGE_SIZE
  const originAllowed = originGuard(d.config)

  async function toolsList(p: Principal, params: unknown, namespace: string | undefined): Promise<unknown> {
    const { cursor } = paramsOf(checks.list, params)
    const all = await listTools(d.resources, p, namespace)
    const after = cursor === undefined ? null : decodeCursor(cursor)
    const start = after === null ? 0 : all.findIndex((t) => t.name > after)
    const page = start < 0 ? [] : all.slice(start, start + pageSize)
    const more = start >= 0 && start + pageSize < all.length
    return { tools: page, ...(more ? { nextCursor: encodeCursor((page.at(-1) as { name: string }).name) } : {}) }
  }

  /** One message → the HTTP reply. */
  async function answer(
    p: Principal,
    body: unknown,
    namespace: string | undefined,
    req: RequestMeta,
  ): Promise<RouteReply> {
    const origin = req.headers?.['origin']
    if (!originAllowed(origin))
      return {
        status: 403,
        body: rpcError(
          null,
          RPC_ERROR.invalidRequest,
          `Forbidden: Origin ${String(origin)} is not allowed (DNS rebinding protection); a browser page calling /mcp must be the platform's own origin or in CORS_ORIGINS`,
        ),
      }
    if (Array.isArray(body))
      return badRequest(
        RPC_ERROR.invalidRequest,
        'Invalid Request: batches are not part of MCP 2025-06-18; send one message per request',
      )
    const version = req.headers?.['mcp-protocol-version']
    if (version !== undefined && !(SUPPORTED_VERSIONS as readonly string[]).includes(version))
      return badRequest(
        RPC_ERROR.invalidRequest,
        `Unsupported MCP-Protocol-Version ${version}; supported: ${SUPPORTED_VERSIONS.join(', ')}`,
      )
    if (!checks.request.Check(body)) {
      // a client's response (to a server request; this server sends none): acknowledged
      if (isClientResponse(body)) return { status: 202 }
      return badRequest(
        RPC_ERROR.invalidRequest,
        'Invalid Request: a request needs a string `method`, an `id` that is a string or an integer (never null) and object `params`',
      )
    }
    // a notification: nothing to answer
    if (body.id === undefined) return { status: 202 }
    const { id, method, params } = body
    const respond = async (): Promise<unknown> => {
      try {
        return rpcResult(id, await run(p, method, params, namespace, req))
      } catch (err) {
        if (err instanceof RpcFault) return rpcError(id, err.code, err.message, err.data)
        throw err
      }
    }
    const token = (params?.['_meta'] as { progressToken?: unknown } | undefined)?.progressToken
    if (
      method === 'tools/call' &&
      req.streamChannelId !== undefined &&
      (typeof token === 'string' || typeof token === 'number')
    ) {
      const name = typeof params?.['name'] === 'string' ? params['name'] : 'tool'
      streamWithProgress(d, req.streamChannelId, token, name, respond)
      return streamReply(req.streamChannelId)
    }
    return { status: 200, body: await respond() }
  }

  async function run(
    p: Principal,
    method: string,
    params: Record<string, unknown> | undefined,
    namespace: string | undefined,
    req: RequestMeta,
  ): Promise<unknown> {
    switch (method) {
      case 'initialize': {
        const asked = paramsOf(checks.initialize, params).protocolVersion
        return {
          protocolVersion: (SUPPORTED_VERSIONS as readonly string[]).includes(asked) ? asked : LATEST,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'agent-platform', version: d.version },
          instructions:
            namespace === undefined
              ? 'Tools are the functions, saved queries and agents you may run: fn.<namespace>.<name>, query.<namespace>.<name>, agent.<namespace>.<name>.'
              : `Tools of namespace ${namespace}: its functions, saved queries and agents you may run.`,
        }
      }
      case 'ping':
        return {}
      case 'tools/list':
        return toolsList(p, params, namespace)
      case 'tools/call': {
        const call = paramsOf(checks.call, params)
        return callTool(d, req.caller, req.requestId, call.name, call.arguments ?? {}, namespace)
      }
      default:
        throw new RpcFault(RPC_ERROR.methodNotFound, `Method not found: ${method}`)
    }
  }

  return [
    bind(R.mcp, ({ principal, body, query, request }) => answer(principal, body, query.namespace, request)),
    bind(R.mcpNamespace, ({ principal, body, params, request }) => answer(principal, body, params.namespace, request)),
  ]
}
