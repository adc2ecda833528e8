import { Kvm } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import { Value } from '@sinclair/typebox/value'
import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import { WEBHOOK_PATH_PATTERN, WebhookEntry } from '../schemas/triggers.ts'
import { rpcSubject } from '../src/api/route.ts'
import type { Caller } from '../src/auth/caller.ts'
import {
  ENVELOPE_HEADER,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  webhookKey,
  webhookRouteId,
  webhooksBucket,
} from '../src/api/webhook-wire.ts'
import { AppError } from '../src/kernel/errors.ts'
import type { Logger } from '../src/kernel/log.ts'
import { listUnstorable } from '../src/kernel/storable-text.ts'
import type { NatsNames } from '../src/platform/nats-names.ts'
import { streamReplicasOf } from '../src/platform/stream-replicas.ts'
import { readBody, send, sendError } from './http.ts'
import { MAX_JSON_DEPTH, scanJson } from './json-scan.ts'
import type { NatsLink } from './nats-status.ts'
import type { TokenVerifier } from './auth.ts'
import { localTimer, type RequestCycle } from './request-cycle.ts'
import { RouteCaller } from './route-call.ts'

/*
 * `{base}/webhooks/<path>`: the gateway matches the path and method from memory — a copy of the
 * WEBHOOKS bucket kept by a KV watch (the resource service writes an entry per webhook after every
 * change), so a call costs no database read here — checks the credentials when the webhook
 * requires them, turns the request into the function's input (the JSON body for POST/PUT/PATCH,
 * the query string for GET/DELETE) and forwards it to the service on `rpc.webhooks.trigger.<method>`.
 * The service re-reads the entry, decides who runs it (the caller, or the owner for an anonymous
 * webhook) and checks that principal's permission at that moment.
 */
export interface WebhookTable {
  lookup(path: string): WebhookEntry | undefined
  /**
   * The bucket's current entry for `path`, read from the server: for a call the copy cannot
   * answer (no entry, inactive, another method). The copy trails a write by the watch's delivery,
   * and the write's reply can reach a client first (a service in this process answers in memory,
   * src/api/local-rpc.ts); a webhook created or changed just now is found here.
   */
  fresh(path: string): Promise<WebhookEntry | undefined>
  /** Resolves once the watch has delivered every entry that existed when it started. */
  ready: Promise<void>
  size(): number
  stop(): void
}

const VALID_PATH = new RegExp(WEBHOOK_PATH_PATTERN)

export async function watchWebhooks(nc: NatsConnection, names: NatsNames, log: Logger): Promise<WebhookTable> {
  const kv = await new Kvm(nc).create(webhooksBucket(names), { history: 1, replicas: streamReplicasOf(nc) })
  const table = new Map<string, WebhookEntry>()
  let markReady: () => void = () => undefined
  const ready = new Promise<void>((resolve) => (markReady = resolve))
  if ((await kv.status()).values === 0) markReady()
  const watch = await kv.watch()
  void (async () => {
    for await (const e of watch) {
      if (e.operation === 'PUT' && e.length > 0) {
        let value: unknown
        try {
          value = e.json()
        } catch {
          value = null
        }
        if (Value.Check(WebhookEntry, value)) table.set(e.key, value)
        else log.warn({ key: e.key }, 'webhook entry does not match its shape: ignored')
      } else table.delete(e.key)
      if (e.delta === 0) markReady()
    }
  })().catch((err: unknown) => log.warn({ err }, 'webhook watch ended'))
  const parse = (value: unknown): WebhookEntry | undefined => (Value.Check(WebhookEntry, value) ? value : undefined)
  return {
    lookup: (path) => table.get(webhookKey(path)),
    async fresh(path) {
      // a path no webhook can have is not looked up (nor sent to the server as a key)
      if (path.length > 255 || !VALID_PATH.test(path)) return undefined
      const e = await kv.get(webhookKey(path)).catch((err: unknown) => {
        throw new AppError(
          503,
          'service.unavailable',
          'the webhook table cannot be read right now; try again shortly',
          { cause: err },
        )
      })
      if (e === null || e.operation !== 'PUT' || e.length === 0) return undefined
      try {
        return parse(e.json())
      } catch {
        return undefined
      }
    },
    ready,
    size: () => table.size,
    stop: () => watch.stop(),
  }
}

/** The per-request handles of the gateway a webhook call uses (gateway/server.ts passes its own). */
export interface WebhookContext {
  nc: NatsConnection
  names: NatsNames
  table: WebhookTable
  verifier: TokenVerifier
  link: NatsLink
  maxBodyBytes: number
  rpcTimeoutMs: number
  begin: RequestCycle['begin']
  fail: RequestCycle['fail']
  finish: RequestCycle['finish']
}

const PREFIX = '/webhooks/'
/** The span name's route of every webhook call (the path itself is the user's, kept in `url.path`). */
const WEBHOOK_ROUTE = '/webhooks/{path}'
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])
const notFound = () => new AppError(404, 'webhook.not_found', 'no webhook at this path')

/** GET/DELETE input: the query parameters (a repeated one becomes a list), without `async`. */
function queryInput(raw: string): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of new URLSearchParams(raw)) {
    if (k === 'async') continue
    const had = out[k]
    out[k] = had === undefined ? v : Array.isArray(had) ? [...(had as unknown[]), v] : [had, v]
  }
  return out
}

function bodyInput(raw: Buffer): Record<string, unknown> {
  if (raw.length === 0) return {}
  if (scanJson(raw) === 'too_deep')
    throw new AppError(400, 'request.too_deep', `the body is nested deeper than ${String(MAX_JSON_DEPTH)} levels`)
  let parsed: unknown
  try {
    parsed = JSON.parse(raw.toString('utf8'))
  } catch {
    throw new AppError(400, 'request.malformed_json', 'the body is not valid JSON (this webhook takes a JSON object)')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new AppError(422, 'request.invalid', 'the body must be a JSON object (it becomes the function input)')
  return parsed as Record<string, unknown>
}

export function webhookHandler(ctx: WebhookContext): (res: HttpResponse, req: HttpRequest) => void {
  const service = new RouteCaller(ctx)
  // one label for every webhook path: the paths are user-defined, so they are not series
  const timer = localTimer('webhooks.call')
  return (res, req) => {
    const state = ctx.begin(res, req, timer, WEBHOOK_ROUTE)
    if (state.log !== undefined) state.log.route = '/webhooks/{path}'
    const method = state.method.toUpperCase()
    const path = state.url.slice(PREFIX.length)
    const apiKey = req.getHeader('x-api-key')
    const authorization = apiKey !== '' ? `Bearer ${apiKey}` : req.getHeader('authorization')
    const rawQuery = req.getQuery() ?? ''
    const timestamp = req.getHeader(TIMESTAMP_HEADER)
    const signature = req.getHeader(SIGNATURE_HEADER)
    const declared = Number(req.getHeader('content-length') || '0')
    let body: Promise<Buffer | null> | undefined
    if (BODY_METHODS.has(method)) {
      if (declared > ctx.maxBodyBytes) {
        ctx.fail(
          res,
          state,
          new AppError(413, 'request.too_large', `body larger than ${String(ctx.maxBodyBytes)} bytes`),
        )
        return
      }
      body = readBody(res, ctx.maxBodyBytes)
    }
    void (async () => {
      try {
        await ctx.table.ready
        let entry = ctx.table.lookup(path)
        if (entry === undefined || !entry.is_active || entry.http_method !== method) entry = await ctx.table.fresh(path)
        if (entry === undefined || !entry.is_active) throw notFound()
        if (entry.http_method !== method) {
          sendError(
            res,
            state,
            405,
            { detail: `this webhook answers ${entry.http_method} only`, code: 'route.method_not_allowed' },
            { allow: entry.http_method },
          )
          ctx.finish(state, 405)
          return
        }
        let caller: Caller | null = null
        if (entry.requires_auth) {
          if (authorization === '')
            throw new AppError(401, 'auth.unauthorized', 'this webhook requires a Bearer token or an API key')
          caller = await ctx.verifier.verify(authorization)
        }
        // a signed webhook: refused here at once without the headers; checked by the service, which holds the secret
        if (entry.signed === true && (timestamp === '' || signature === ''))
          throw AppError.of(
            'webhook.signature_invalid',
            `this webhook requires signed calls: ${TIMESTAMP_HEADER} and ${SIGNATURE_HEADER} (sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">)`,
          )
        let input: Record<string, unknown>
        let rawBody: Buffer | undefined
        if (body !== undefined) {
          const raw = await body
          if (raw === null)
            throw new AppError(413, 'request.too_large', `body larger than ${String(ctx.maxBodyBytes)} bytes`)
          input = bodyInput(raw)
          rawBody = raw
        } else input = queryInput(rawQuery)
        const bad = listUnstorable(input, 'input')
        if (bad.length > 0)
          throw new AppError(
            400,
            'request.invalid_text',
            'text must not contain NUL characters (U+0000) or lone surrogates',
            { issues: bad.map((b) => ({ path: b.path, message: `contains ${b.reason}` })) },
          )
        const async = new URLSearchParams(rawQuery).get('async')
        if (state.aborted) return
        // a signed call goes as the bytes it was signed over (the body as received, or the query string), which the service verifies
        const signed = entry.signed === true
        const sent = !signed
          ? JSON.stringify(input)
          : rawBody !== undefined
            ? JSON.stringify({ payload: rawBody.toString('utf8') })
            : JSON.stringify({ payload: rawQuery, input })
        const headers = signed
          ? { [ENVELOPE_HEADER]: '1', [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: signature }
          : undefined
        // in memory when this process serves the trigger route, else over NATS (gateway/route-call.ts)
        const reply = await service
          .call(
            rpcSubject(ctx.names, webhookRouteId(method)),
            {
              requestId: state.requestId,
              caller,
              params: { path },
              query: async === '1' || async === 'true' ? { async } : {},
              ...(headers === undefined ? {} : { headers }),
              ...(state.span === undefined ? {} : { traceparent: state.span.traceparent }),
            },
            Buffer.from(sent),
          )
          .catch((err: unknown) => {
            if (err instanceof AppError && err.code === 'service.timeout') {
              throw new AppError(
                504,
                'service.timeout',
                'the function did not answer within the gateway timeout; it goes on running (call with ?async=1 for long functions)',
              )
            }
            throw err
          })
        send(res, state, reply.status, reply.data, 'application/json', reply.headers)
        ctx.finish(state, reply.status)
      } catch (err) {
        ctx.fail(res, state, err)
      }
    })()
  }
}
