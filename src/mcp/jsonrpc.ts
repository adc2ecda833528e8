/*
 * JSON-RPC 2.0 as MCP uses it: the error codes, the response shapes, and the one error type the
 * handlers throw to answer a request with a JSON-RPC error rather than an HTTP one.
 */
export type RpcId = string | number | null

export const RPC_ERROR = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
} as const

export interface JsonRpcErrorBody {
  jsonrpc: '2.0'
  id: RpcId
  error: { code: number; message: string; data?: unknown }
}

export const rpcResult = (id: RpcId, result: unknown): { jsonrpc: '2.0'; id: RpcId; result: unknown } => ({
  jsonrpc: '2.0',
  id,
  result,
})

export const rpcError = (id: RpcId, code: number, message: string, data?: unknown): JsonRpcErrorBody => ({
  jsonrpc: '2.0',
  id,
  error: { code, message, ...(data === undefined ? {} : { data }) },
})

/** Thrown by a method to answer its request with this JSON-RPC error (HTTP 200: the exchange itself worked). */
export class RpcFault extends Error {
  readonly code: number
  readonly data: unknown

  constructor(code: number, message: string, data?: unknown) {
    super(message)
    this.code = code
    this.data = data
  }
}
