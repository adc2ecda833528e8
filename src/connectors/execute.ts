import type { IncomingHttpHeaders } from 'node:http'
import type { Principal } from '../auth/principal.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { AppError, forbidden, invalid, notFound } from '../kernel/errors.ts'
import { connectorKind } from '../kinds/connector/kind.ts'
import { guardedFetch, type OutboundResponse } from '../platform/outbound-http.ts'
import { canOnResource } from '../resources/permissions.ts'
import { attemptTimeoutMs, outboundDeps, outboundPolicy, type ConnectorDeps, type ConnectorRecord } from './deps.ts'
import { accessToken } from './oauth.ts'
import { buildRequest } from './request.ts'
import { secretValue } from './secrets.ts'

/*
 * Calling one operation of a connector: the one path for the execute endpoint and agent tools.
 * The caller must be able to read the connector (else 404) and hold `execute` on it (else 403),
 * checked here on the connector as it is now. The input is validated against the operation's JSON
 * Schema; the request goes through the guarded outbound client (HTTPS unless CONNECTOR_HTTP_HOSTS
 * lists the host, private addresses refused after DNS and pinned, redirects followed up to
 * CONNECTOR_MAX_REDIRECTS with every hop checked again, the response capped at
 * CONNECTOR_MAX_RESPONSE_BYTES). Retries (the connector's `retry`, clamped to
 * CONNECTOR_MAX_RETRIES) only for idempotent methods, on connection failures, timeouts and the
 * listed statuses; a refused address is never retried.
 */
export interface OperationResult {
  status: number
  headers: Record<string, string>
  body: unknown
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS'])
const RETRYABLE_CODES = new Set(['outbound.connect_failed', 'outbound.timeout'])

/** The connector as `p` may use it: 404 when it may not read it, 403 without execute. */
export async function connectorFor(
  d: ConnectorDeps,
  p: Principal,
  namespace: string,
  name: string,
): Promise<ConnectorRecord> {
  const c = (await d.resources.get(p, connectorKind, { namespace, name })) as ConnectorRecord
  if (c.is_active === false) throw notFound(`connector ${namespace}/${name} not found`)
  if (!canOnResource(p, connectorKind, 'execute', { namespace, name, ownerId: c.owner_id }))
    throw forbidden(`not allowed to execute connector ${namespace}/${name}`)
  return c
}

/** Credentials as headers (or a query parameter for api_key in the query). */
async function credentials(
  d: ConnectorDeps,
  p: Principal,
  c: ConnectorRecord,
): Promise<{ headers: Record<string, string>; query: Record<string, string>; secretHeaders: string[] }> {
  const a = c.auth
  const secret = () => secretValue(d, c, a.secret as string)
  switch (a.type) {
    case 'bearer':
      return { headers: { authorization: `Bearer ${await secret()}` }, query: {}, secretHeaders: [] }
    case 'basic': {
      const value = await secret()
      const pair = a.username !== undefined ? `${a.username}:${value}` : value
      return {
        headers: { authorization: `Basic ${Buffer.from(pair, 'utf8').toString('base64')}` },
        query: {},
        secretHeaders: [],
      }
    }
    case 'api_key': {
      const value = await secret()
      if (a.query_param !== undefined) return { headers: {}, query: { [a.query_param]: value }, secretHeaders: [] }
      const header = (a.header ?? 'X-API-Key').toLowerCase()
      return { headers: { [header]: value }, query: {}, secretHeaders: [header] }
    }
    case 'oauth2':
      return { headers: { authorization: `Bearer ${await accessToken(d, p.userId, c)}` }, query: {}, secretHeaders: [] }
    default:
      return { headers: {}, query: {}, secretHeaders: [] }
  }
}

function headersOf(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || k === 'set-cookie') continue
    out[k] = Array.isArray(v) ? v.join(', ') : v
  }
  return out
}

function bodyOf(res: OutboundResponse): unknown {
  if (res.body.length === 0) return null
  const type = String(res.headers['content-type'] ?? '').toLowerCase()
  const text = () => res.body.toString('utf8')
  if (/\bjson\b|\+json/.test(type)) {
    try {
      return JSON.parse(text()) as unknown
    } catch {
      return text()
    }
  }
  if (type === '' || type.startsWith('text/') || /xml|javascript|x-www-form-urlencoded/.test(type)) return text()
  return { base64: res.body.toString('base64') }
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export async function callOperation(
  d: ConnectorDeps,
  p: Principal,
  c: ConnectorRecord,
  opName: string,
  input: Record<string, unknown>,
): Promise<OperationResult> {
  const op = c.operations.find((o) => o.name === opName)
  if (op === undefined)
    throw notFound(`connector ${c.namespace}/${c.name} has no operation ${opName}`, 'connector.operation_not_found')
  const issues = validateAgainst(op.parameters ?? {}, input, 'input')
  if (issues.length > 0)
    throw invalid(`the input does not match the parameters of ${opName}`, issues, 'connector.invalid_input')
  const built = buildRequest(c.base_url, c.headers, op, input)
  const cred = await credentials(d, p, c)
  const url = new URL(built.url)
  for (const [k, v] of Object.entries(cred.query)) url.searchParams.set(k, v)
  const headers = { ...built.headers, ...cred.headers }
  const retries = IDEMPOTENT.has(op.method) ? Math.min(c.retry.max_retries ?? 0, d.config.CONNECTOR_MAX_RETRIES) : 0
  const started = Date.now()
  for (let attempt = 0; ; attempt++) {
    let res: OutboundResponse | undefined
    try {
      res = await guardedFetch(
        url.toString(),
        {
          method: built.method,
          headers,
          ...(built.body === undefined ? {} : { body: built.body }),
          timeoutMs: attemptTimeoutMs(d.config, c.timeout_seconds),
          ...outboundPolicy(d.config),
          maxRedirects: d.config.CONNECTOR_MAX_REDIRECTS,
          secretHeaders: cred.secretHeaders,
        },
        outboundDeps(d),
      )
    } catch (err) {
      if (!(err instanceof AppError) || !RETRYABLE_CODES.has(err.code) || attempt >= retries) throw err
    }
    if (res !== undefined && (!(c.retry.on_status ?? []).includes(res.status) || attempt >= retries)) {
      d.log.debug(
        {
          connector: `${c.namespace}/${c.name}`,
          op: opName,
          status: res.status,
          attempts: attempt + 1,
          ms: Date.now() - started,
        },
        'connector call',
      )
      return { status: res.status, headers: headersOf(res.headers), body: bodyOf(res) }
    }
    await pause((c.retry.backoff_ms ?? 0) * 2 ** attempt)
  }
}
