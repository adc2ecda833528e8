import { randomUUID } from 'node:crypto'
import type { KV } from '@nats-io/kv'
import { bind, type BoundRoute, type ResolvedInput } from '../api/bind.ts'
import type { RouteDef, RpcReply } from '../api/route.ts'
import { permissionSet } from '../feature/permissions.ts'
import { can, loadPrincipal, type Principal } from '../auth/principal.ts'
import { enqueueFunction, invokeFunction } from '../functions/invoke.ts'
import type { InvokeDeps } from '../feature/invoke-deps.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { activeFunction, executableFunction } from '../kinds/function/executable.ts'
import type { Config } from '../kernel/config.ts'
import { secretAad, type SecretBox } from '../kernel/crypto.ts'
import { AppError, conflict, forbidden, invalid, notFound, unauthorized } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { ResourceService } from '../resources/service.ts'
import { disabledError } from '../../sandbox/executor.ts'
import { WEBHOOK_CALL_ROUTES, WEBHOOK_ROUTES as R } from './routes.ts'
import { ENVELOPE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../api/webhook-wire.ts'
import { verifyWebhook } from './signature.ts'
import {
  publishWebhook,
  readWebhookEntry,
  toApi,
  unpublishWebhook,
  type WebhookFields,
  type WebhookRowType,
  type WebhookStore,
} from './store.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const webhookPermissions = permissionSet()

/*
 * Webhook management (owner, or `:all` holders) and the calls. A call runs the function as a job
 * of the `fn` pool, as the caller (requires_auth) or as the owner (anonymous), whose permission to
 * run the function is checked at that moment — a webhook never lets anyone do more than the
 * principal it runs as may do right now. Synchronous calls wait up to the function's time limit
 * (FUNCTION_TIMEOUT at most) and the gateway's RPC timeout (30 s), whichever is shorter; longer
 * functions are called with `?async=1`.
 */
export const WEBHOOK_PERMISSIONS = {
  create: webhookPermissions.add('platform.webhooks.create:own', 'Webhooks: create (running functions you may run)'),
  readOwn: webhookPermissions.add('platform.webhooks.read:own', 'Webhooks: list and read your own'),
  readAll: webhookPermissions.add('platform.webhooks.read:all', "Webhooks: list and read everyone's (admin)"),
  updateOwn: webhookPermissions.add('platform.webhooks.update:own', 'Webhooks: change your own'),
  updateAll: webhookPermissions.add('platform.webhooks.update:all', "Webhooks: change everyone's (admin)"),
  deleteOwn: webhookPermissions.add('platform.webhooks.delete:own', 'Webhooks: delete your own'),
  deleteAll: webhookPermissions.add('platform.webhooks.delete:all', "Webhooks: delete everyone's (admin)"),
}

export interface WebhookHandlerDeps {
  db: Parameters<typeof loadPrincipal>[0]
  kv: KV
  store: WebhookStore
  resources: ResourceService
  invoke: InvokeDeps
  config: Config
  box: SecretBox
  log: Logger
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The associated data of a webhook's stored signing secret (a ciphertext copied to another webhook does not open). */
const secretAadOf = (id: string) => secretAad('webhook', id, 'signing_secret')

export function webhookHandlers(d: WebhookHandlerDeps): BoundRoute[] {
  const { store, kv } = d
  const P = WEBHOOK_PERMISSIONS

  /** A webhook the principal may act on (`own` for its own, `all` for anyone's); 404 otherwise. */
  const visible = async (p: Principal, path: string, own: string, all: string): Promise<WebhookRowType> => {
    const row = await store.byPath(path)
    if (row === null || !(can(p, all) || (row.owner_id === p.userId && can(p, own))))
      throw notFound(`no webhook at ${path}`, 'webhook.not_found')
    return row
  }

  /*
   * A signed webhook's call arrives from the gateway as an envelope (header ENVELOPE_HEADER):
   * `{payload}` — the raw body as received, which is also the input — or `{payload, input}` for
   * GET/DELETE (payload: the raw query string), with the two signature headers. The signature is
   * checked here, where the secret can be opened, against the secret stored now; a secret removed
   * meanwhile means the call needs none.
   */
  const signedInput = async (id: string, signed: boolean, method: string, req: ResolvedInput): Promise<unknown> => {
    const headers = req.request.headers ?? {}
    const enveloped = headers[ENVELOPE_HEADER] === '1' && isObject(req.body) && typeof req.body['payload'] === 'string'
    if (!enveloped) {
      if (signed)
        throw AppError.of(
          'webhook.signature_invalid',
          `this webhook requires signed calls: ${TIMESTAMP_HEADER} and ${SIGNATURE_HEADER}`,
        )
      return req.body === undefined ? {} : req.body
    }
    const envelope = req.body as { payload: string; input?: unknown }
    const sealed = signed ? await store.signingSecret(id) : null
    if (sealed !== null) {
      const call = {
        timestamp: headers[TIMESTAMP_HEADER] ?? '',
        signature: headers[SIGNATURE_HEADER] ?? '',
        payload: envelope.payload,
      }
      verifyWebhook(
        d.box.decrypt(sealed, secretAadOf(id)),
        call,
        d.config.WEBHOOK_SIGNATURE_TOLERANCE_SECONDS,
        Date.now(),
      )
    }
    if (method === 'GET' || method === 'DELETE') return envelope.input ?? {}
    if (envelope.payload === '') return {}
    // the gateway checked the bytes are one JSON object before sending them
    return JSON.parse(envelope.payload) as unknown
  }

  /** The ciphertext for a new or replaced signing secret; undefined: unchanged, null: removed. */
  const sealSecret = (id: string, given: string | null | undefined): string | null | undefined =>
    given === undefined ? undefined : given === null ? null : d.box.encrypt(given, secretAadOf(id))

  const call = (route: RouteDef): BoundRoute => ({
    route,
    async handle(req: ResolvedInput): Promise<RpcReply> {
      const path = req.params['path'] ?? ''
      // the entry the gateways matched on (not a database read); gone or changed meanwhile → 404/405
      const entry = await readWebhookEntry(kv, path)
      if (entry === null || !entry.is_active) throw notFound(`no webhook at ${path}`, 'webhook.not_found')
      if (entry.http_method !== route.method)
        return {
          status: 405,
          headers: { allow: entry.http_method },
          error: {
            status: 405,
            detail: `this webhook answers ${entry.http_method} only`,
            code: 'route.method_not_allowed',
          },
        }
      let principal: Principal
      if (entry.requires_auth) {
        if (req.request.caller === null) throw unauthorized('this webhook requires a Bearer token or an API key')
        principal = await loadPrincipal(d.db, req.request.caller)
      } else {
        // anonymous: the owner's live permissions (a deactivated owner's webhooks stop working)
        principal = await loadPrincipal(d.db, { sub: entry.owner_id, via: 'jwt' }).catch(() => {
          throw notFound(`no webhook at ${path}`, 'webhook.not_found')
        })
      }
      const given = await signedInput(entry.id, entry.signed === true, route.method, req)
      const fn = await activeFunction(d.resources, principal, entry.function_namespace, entry.function_name)
      if (fn['shared_pool'] !== true && d.config.SANDBOX_EXECUTOR === 'disabled') throw disabledError()
      if (!isObject(given)) throw invalid('the webhook input must be a JSON object')
      const input = { ...entry.default_values, ...given }
      const issues = validateAgainst(isObject(fn['input_schema']) ? fn['input_schema'] : {}, input, '/input')
      if (issues.length > 0)
        throw invalid("input does not match the function's input_schema", issues, 'function.invalid_input')
      const opts = { input, triggerType: 'webhook', triggerId: entry.id }
      if (req.query['async'] === '1' || req.query['async'] === 'true') {
        const job = await enqueueFunction(d.invoke, principal, fn, { ...opts, sync: false })
        return { status: 202, headers: { 'x-execution-id': job.id }, body: { execution_id: job.id, status: 'queued' } }
      }
      const out = await invokeFunction(d.invoke, principal, fn, opts)
      const headers = { 'x-execution-id': out.execution_id }
      if (out.status === 'success') return { status: 200, headers, body: out.result }
      if (out.status === 'timeout')
        return { status: 504, headers, error: { status: 504, detail: out.error, code: 'webhook.function_timeout' } }
      return { status: 502, headers, error: { status: 502, detail: out.error, code: 'webhook.function_error' } }
    },
  })

  const fieldsOf = (row: WebhookRowType): WebhookFields => ({
    path: row.path,
    http_method: row.http_method,
    function_namespace: row.function_namespace,
    function_name: row.function_name,
    requires_auth: row.requires_auth,
    default_values: row.default_values,
    description: row.description,
    is_active: row.is_active,
  })

  return [
    bind(R.list, async ({ principal: p, query }) => {
      const everyone = query.all === true && can(p, P.readAll)
      if (!everyone && !can(p, P.readOwn)) throw forbidden(`requires ${P.readOwn}`)
      const rows = await store.list(everyone ? null : p.userId, query.limit ?? 100, query.offset ?? 0)
      return { body: rows.map(toApi) }
    }),
    bind(R.create, async ({ principal: p, body: b }) => {
      if (!can(p, P.create)) throw forbidden(`requires ${P.create}`)
      const f: WebhookFields = {
        path: b.path,
        http_method: b.http_method ?? 'POST',
        function_namespace: b.function_namespace ?? 'default',
        function_name: b.function_name,
        requires_auth: b.requires_auth ?? true,
        default_values: b.default_values ?? {},
        description: b.description ?? '',
        is_active: b.is_active ?? true,
      }
      // checked again at every call; refused here too so a typo is seen at once
      await executableFunction(d.resources, p, f.function_namespace, f.function_name)
      const id = randomUUID()
      const row = await store.create(id, p.userId, f, sealSecret(id, b.signing_secret) ?? null)
      if (row === null) throw conflict(`a webhook already uses the path ${f.path}`, 'webhook.exists')
      await publishWebhook(kv, row)
      return { status: 201, body: toApi(row) }
    }),
    bind(R.get, async ({ principal: p, params }) => ({
      body: toApi(await visible(p, params.path, P.readOwn, P.readAll)),
    })),
    bind(R.update, async ({ principal: p, params, body: b }) => {
      const row = await visible(p, params.path, P.updateOwn, P.updateAll)
      const { signing_secret: secret, ...changes } = b
      const f: WebhookFields = {
        ...fieldsOf(row),
        ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)),
      }
      if (f.function_namespace !== row.function_namespace || f.function_name !== row.function_name)
        await executableFunction(d.resources, p, f.function_namespace, f.function_name)
      if (f.path !== row.path && (await store.byPath(f.path)) !== null)
        throw conflict(`a webhook already uses the path ${f.path}`, 'webhook.exists')
      const next = await store.update(row.id, f, sealSecret(row.id, secret)).catch((err: unknown) => {
        // the unique path raced with another change
        if (err instanceof Error && /unique|duplicate/i.test(err.message))
          throw conflict(`a webhook already uses the path ${f.path}`, 'webhook.exists')
        throw err
      })
      if (next === null) throw notFound(`no webhook at ${params.path}`, 'webhook.not_found')
      if (next.path !== row.path) await unpublishWebhook(kv, row.path)
      await publishWebhook(kv, next)
      return { body: toApi(next) }
    }),
    bind(R.delete, async ({ principal: p, params }) => {
      const row = await visible(p, params.path, P.deleteOwn, P.deleteAll)
      await store.delete(row.id)
      await unpublishWebhook(kv, row.path)
      return { status: 204 }
    }),
    ...Object.values(WEBHOOK_CALL_ROUTES).map(call),
  ]
}
