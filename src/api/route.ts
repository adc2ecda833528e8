import type { TObject, TSchema } from '@sinclair/typebox'
import type { WireError } from '../kernel/errors.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import type { Caller } from '../auth/caller.ts'

/*
 * A route is described once: the gateway registers it, validates requests against its schemas and
 * forwards it over NATS; the OpenAPI documents are generated from the same list; the service side
 * binds a handler to its id.
 */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type Surface = 'runtime' | 'management' | 'adapter'

export interface RouteDef {
  /** Unique id; also the NATS subject suffix (`rpc.<id>`). Dotted lower-case tokens. */
  id: string
  method: HttpMethod
  /** OpenAPI-style path with `{param}` segments. */
  path: string
  surface: Surface
  summary: string
  tags: string[]
  /** Whether a bearer token is required. */
  auth: boolean
  /** `rpc`: forwarded to a service over NATS; `local`: answered by the gateway itself. */
  target: 'rpc' | 'local'
  params?: TObject
  query?: TObject
  body?: TSchema
  response?: TSchema
  /** Success status (200 unless stated). */
  status?: number
  /** Extra documented outcomes. */
  errors?: number[]
  /**
   * A Server-Sent Events route (gateway/sse.ts): the request is forwarded as usual; when the
   * handler answers 200 with `streamReply(...)` (src/streaming/channel.ts) the gateway relays that
   * stream channel as `text/event-stream`. `platform`: `id:` (stream sequence), `event:` and
   * `data:` lines; `openai`: `data:` lines only, ending with `data: [DONE]`; `mcp`: `id:` and one
   * `data:` line per event, each a JSON-RPC message (the SSE event type stays the default
   * `message`, as the MCP Streamable HTTP transport reads it), nothing after the last.
   */
  stream?: {
    format: 'platform' | 'openai' | 'mcp'
    /**
     * The request streams only when the JSON body's top-level field of this name is `true` (the
     * OpenAI wire's `stream`): otherwise the gateway forwards it as a plain request, with no
     * channel to listen on (a subscription made and dropped for every non-stream call).
     */
    bodyFlag?: string
    /**
     * The request streams only when the JSON body holds a value (not null) at this path of object
     * keys (MCP's `params._meta.progressToken`: a client asks for progress, hence a stream).
     */
    bodyPath?: readonly string[]
  }
  /**
   * A JSON-RPC 2.0 endpoint (MCP, src/mcp/): the gateway's own refusals of the body keep the
   * JSON-RPC shape — not JSON answers 400 with error -32700, a body off the route's schema 400
   * with -32600 — and a 401 names the protected resource metadata (RFC 9728) in
   * `WWW-Authenticate: Bearer resource_metadata="<base>/.well-known/oauth-protected-resource"`.
   */
  jsonRpc?: boolean
  /**
   * Cookies the gateway forwards to the handler (`request.cookies`), by name; every other cookie
   * stays at the edge. For browser-bound flows (the connector OAuth callback's nonce).
   */
  cookies?: readonly string[]
  /**
   * The handler reads the client's address (`request.clientIp`: the peer, or the nearest untrusted
   * X-Forwarded-For hop behind TRUSTED_PROXIES), for per-address rate limits. Other routes get ''
   * — the peer address is a system call (getpeername) per request, ~8 % of the CPU of a cheap read.
   */
  clientIp?: boolean
  /**
   * A page route: the handler answers the HTML as a string body (or its UTF-8 bytes already); a 200
   * travels over NATS as the page's UTF-8 bytes (not a JSON string: escaping and parsing a page of tens of KB was a third
   * of a render's CPU) and the gateway sends it as `text/html` with the reply's headers
   * (Content-Security-Policy and the like). Errors stay JSON.
   */
  html?: boolean
  /**
   * `document`: the JSON body carries a document's text (a config or package YAML), which may be
   * larger than HTTP_MAX_BODY_BYTES: the gateway takes up to the document limit (CONFIG_MAX_BYTES
   * with room for JSON escaping); the handler checks the text itself against CONFIG_MAX_BYTES.
   */
  bodyLimit?: 'document'
  /** With `html`: the content type of the text the 200 carries, when not a page (a YAML export). */
  contentType?: string
  /**
   * A route whose payload streams between the client and the NATS object store through the
   * gateway (gateway/blob-transfer.ts), never held whole in memory. `upload`: a body that is not
   * JSON is streamed into an object the handler names in a `prepare` phase, then handed to it in a
   * `commit` phase (`RpcRequest.blob`); a JSON body is forwarded as usual. `download`: a 200 reply
   * `{blob: {...}}` (schemas/collection.ts BlobDownload) makes the gateway stream that object.
   */
  blob?: 'upload' | 'download'
  /**
   * The last `{param}` of `path` takes the rest of the URL, `/` included (multi-segment webhook
   * paths): the gateway registers the route as `<prefix>*` and percent-decodes the rest.
   */
  greedyParam?: boolean
  /**
   * Served by the gateway's webhook dispatcher (gateway/webhooks.ts: path and method matched from
   * memory, optional credentials, input from body or query) rather than registered as a route of
   * its own; listed so the documents describe it and the service binds its handler.
   */
  webhook?: boolean
  /**
   * Query parameters the route does not declare are refused with 422 `request.invalid` (naming
   * each) instead of being dropped at the edge, as they are on every other route.
   */
  strictQuery?: boolean
  /** The permission(s) the handler needs, recorded with the route (not yet emitted into the OpenAPI documents); the check stays in the handler. */
  permission?: string | readonly string[]
  /**
   * Request headers the handler reads (lower-case names, e.g. `x-application`): the gateway
   * forwards only these, in `request.headers` (absent or empty headers are left out). Values are
   * the client's text: the handler validates them.
   */
  headers?: readonly string[]
}

/**
 * Keeps the literal type of a route, so a handler bound to it (src/api/bind.ts) receives its
 * params, query and body typed from the route's own schemas, and `principal` typed from `auth`.
 * Declare shared parts with `as const` (`{ auth: true, target: 'rpc' } as const`): a widened
 * `auth: boolean` would type the principal as `Principal | null`.
 */
export function defineRoute<const R extends RouteDef>(route: R): R {
  return route
}

export interface RpcRequest {
  requestId: string
  params: Record<string, string>
  query: Record<string, unknown>
  body: unknown
  caller: Caller | null
  /** The client's address as the gateway saw it (X-Forwarded-For only from TRUSTED_PROXIES). */
  clientIp: string
  /**
   * Stream routes only: a fresh channel id the gateway already listens on. A handler starting a
   * new stream publishes on it and answers `streamReply(req.streamChannelId)`, so no early event
   * is missed.
   */
  streamChannelId?: string
  /** Stream routes only: the client's `Last-Event-ID` header (or `?last_id=`), a stream sequence. */
  streamLastId?: number
  /** The request headers the route declared in `RouteDef.headers` that the client sent. */
  headers?: Record<string, string>
  /** The cookies the route asked for (`RouteDef.cookies`) that the request carried. */
  cookies?: Record<string, string>
  /** Upload routes only (`blob: 'upload'`), for a streamed body: which phase this call is; the body is absent then. */
  blob?: BlobPhase
  /** The gateway's request span as a W3C traceparent, when the gateway traces (src/platform/tracing.ts). */
  traceparent?: string
}

/**
 * The two calls of a streamed upload (gateway/blob-transfer.ts). `prepare`: before any byte is
 * read, the handler checks the caller and answers where to put the bytes and how many are allowed
 * (schemas/collection.ts BlobUploadPlan). `commit`: the bytes are in that object; the handler
 * records them (and deletes the object when it refuses them). `abort`: the gateway gave up after
 * `prepare` (over the limit, client gone); the object is deleted now rather than when its
 * reservation expires.
 */
export type BlobPhase =
  | { phase: 'prepare'; declaredBytes: number | null; contentType: string }
  | {
      phase: 'commit'
      object: string
      size: number
      sha256: string
      filename: string | null
      contentType: string
      fields: Record<string, string>
    }
  /** The body never reached the object store whole (refused, client gone): the reservation may go now. */
  | { phase: 'abort'; object: string }

export interface RpcReply {
  status: number
  body?: unknown
  headers?: Record<string, string>
  error?: WireError
  /**
   * The user an API key resolved to (set by the RPC server for `api_key` callers): the gateway's
   * request log records it (gateway/request-log.ts); it never reaches the HTTP response.
   */
  userId?: string
}

export type RpcHandler = (req: RpcRequest) => Promise<RpcReply>

export const rpcSubject = (names: NatsNames, routeId: string): string => names.subject(`rpc.${routeId}`)
