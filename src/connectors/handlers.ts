import { bind, type BoundRoute } from '../api/bind.ts'
import type { Principal } from '../auth/principal.ts'
import { permissionSet } from '../feature/permissions.ts'
import { AppError, invalid } from '../kernel/errors.ts'
import { connectorKind } from '../kinds/connector/kind.ts'
import { callbackHeaders, disconnectReply, startReply } from '../oauth-client/replies.ts'
import type { ConnectorDeps } from './deps.ts'
import { callOperation, connectorFor } from './execute.ts'
import { clearNonceCookie, disconnect, finishFlow, startFlow, tokenStatus } from './oauth.ts'
import { importOpenApi } from './openapi.ts'
import { CONNECTOR_ROUTES as R, NONCE_COOKIE } from './routes.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const connectorPermissions = permissionSet()

/*
 * The connector routes besides CRUD: OpenAPI import, operation execute, and the OAuth flow
 * (start, callback, status, disconnect). Permissions come from the resource engine (create,
 * update, read) and `execute` on the connector, checked in `connectorFor` on every call.
 */
connectorPermissions.add(
  'platform.connectors/{namespace}/{name}.execute:own',
  "call operations of one's own connectors and connect them with OAuth",
)
connectorPermissions.add(
  'platform.connectors/{namespace}/{name}.execute:all',
  'call operations of any connector and connect it with OAuth',
)

/** The connector for its OAuth token's status or removal: as connectorFor, and one with `auth.type: oauth2` (else 422). */
async function oauthConnectorFor(d: ConnectorDeps, p: Principal, at: { namespace: string; name: string }) {
  const c = await connectorFor(d, p, at.namespace, at.name)
  if (c.auth.type !== 'oauth2')
    throw new AppError(422, 'connector.not_oauth2', `connector ${c.namespace}/${c.name} does not use OAuth 2`)
  return c
}

export function connectorHandlers(d: ConnectorDeps): BoundRoute[] {
  return [
    bind(R.import, async ({ principal: p, body: b }) => {
      const api = await importOpenApi(b.openapi, d.config.CONNECTOR_MAX_OPERATIONS)
      const baseUrl = b.base_url ?? api.baseUrl
      if (baseUrl === null)
        throw invalid('base_url is required: the document has no absolute `servers` URL', [
          { path: 'base_url', message: 'required' },
        ])
      const spec: Record<string, unknown> = {
        base_url: baseUrl,
        operations: api.operations,
        description: (b.description ?? api.title).slice(0, 4000),
        ...(b.auth === undefined ? {} : { auth: b.auth }),
        ...(b.headers === undefined ? {} : { headers: b.headers }),
        ...(b.timeout_seconds === undefined ? {} : { timeout_seconds: b.timeout_seconds }),
        ...(b.retry === undefined ? {} : { retry: b.retry }),
      }
      const namespace = b.namespace ?? 'default'
      if (b.replace === true) {
        const updated = await d.resources
          .update(p, connectorKind, { namespace, name: b.name }, spec)
          .catch((err: unknown) => {
            if (err instanceof AppError && err.status === 404) return null
            throw err
          })
        if (updated !== null) return { status: 200, body: updated }
      }
      return { status: 201, body: await d.resources.create(p, connectorKind, { namespace, name: b.name, ...spec }) }
    }),

    bind(R.execute, async ({ principal: p, params, body }) => {
      const c = await connectorFor(d, p, params.namespace, params.name)
      return { body: await callOperation(d, p, c, params.op, body.input ?? {}) }
    }),

    bind(R.oauthStart, async ({ principal: p, params }) => {
      const c = await connectorFor(d, p, params.namespace, params.name)
      const flow = await startFlow(d, p.userId, c)
      return startReply(flow)
    }),

    bind(R.oauthStatus, async ({ principal: p, params }) => {
      const c = await oauthConnectorFor(d, p, params)
      return { body: await tokenStatus(d, p.userId, c) }
    }),

    bind(R.oauthDisconnect, async ({ principal: p, params }) => {
      const c = await oauthConnectorFor(d, p, params)
      const { revoked } = await disconnect(d, p.userId, c)
      return disconnectReply(revoked)
    }),

    bind(R.oauthCallback, async ({ query, request }) => {
      const done = await finishFlow(d, query, request.cookies?.[NONCE_COOKIE])
      return {
        body: {
          status: 'connected',
          connector: { namespace: done.connector.namespace, name: done.connector.name },
          scope: done.scope,
          expires_at: done.expires_at,
        },
        headers: callbackHeaders(clearNonceCookie()),
      }
    }),
  ]
}
