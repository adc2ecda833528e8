import {
  ConnectorImportBody,
  ConnectorParams,
  ExecuteOperationBody,
  ExecuteOperationResult,
  OAuthCallbackQuery,
  OAuthConnected,
  OAuthStartResult,
  OAuthTokenStatus,
  OperationParams,
} from '../../schemas/connector.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'
import { connectorKind } from '../kinds/connector/kind.ts'

/** The OAuth callback (the redirect URI providers are given) and the cookie binding a flow to its browser. */
export const CALLBACK_PATH = '/api/v1/oauth/callback'
export const NONCE_COOKIE = 'platform_oauth_nonce'

/* Connector routes besides the generic CRUD of the kind (src/kinds/connector/kind.ts). Data only: the gateway imports it. */
const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['Connectors']
const base = '/api/v1/connectors/{namespace}/{name}'

export const CONNECTOR_ROUTES = {
  import: defineRoute({
    ...m,
    tags,
    id: 'connectors.import',
    method: 'POST',
    path: '/api/v1/connectors/import',
    summary:
      'Create (or with `replace`, update) a connector from an OpenAPI 3 document (object, or YAML/JSON text); operation name = operationId, or method_path',
    body: ConnectorImportBody,
    response: connectorKind.record,
    status: 201,
    errors: [403, 404, 409, 422],
  }),
  execute: defineRoute({
    ...m,
    tags,
    id: 'connectors.execute',
    method: 'POST',
    path: `${base}/operations/{op}/execute`,
    summary:
      'Call one operation; answers the upstream status, headers and body (a refused address or a too large answer is an `outbound.*` error)',
    params: OperationParams,
    body: ExecuteOperationBody,
    response: ExecuteOperationResult,
    permission: 'platform.connectors/{namespace}/{name}.execute:own',
    errors: [400, 403, 404, 409, 422, 502, 504],
  }),
  oauthStart: defineRoute({
    ...m,
    tags,
    id: 'connectors.oauth-start',
    method: 'POST',
    path: `${base}/oauth/start`,
    summary:
      'Start the OAuth 2 authorization-code flow (PKCE S256) for the caller; answers the provider URL to open in the browser and sets the HttpOnly nonce cookie binding the flow to that browser',
    params: ConnectorParams,
    response: OAuthStartResult,
    permission: 'platform.connectors/{namespace}/{name}.execute:own',
    errors: [403, 404, 422],
  }),
  oauthStatus: defineRoute({
    ...m,
    tags,
    id: 'connectors.oauth-status',
    method: 'GET',
    path: `${base}/oauth/token`,
    summary: "The caller's OAuth connection to this connector (never the tokens)",
    params: ConnectorParams,
    response: OAuthTokenStatus,
    errors: [403, 404, 422],
  }),
  oauthDisconnect: defineRoute({
    ...m,
    tags,
    id: 'connectors.oauth-disconnect',
    method: 'DELETE',
    path: `${base}/oauth/token`,
    summary:
      "Remove the caller's OAuth connection: the tokens are revoked at the provider (RFC 7009, best effort) and deleted",
    params: ConnectorParams,
    status: 204,
    errors: [403, 404, 422],
  }),
  oauthCallback: defineRoute({
    surface: 'management',
    auth: false,
    target: 'rpc',
    tags,
    id: 'connectors.oauth-callback',
    method: 'GET',
    path: CALLBACK_PATH,
    summary:
      "The provider's redirect back (no token: the single-use state identifies the flow, the nonce cookie the browser)",
    query: OAuthCallbackQuery,
    cookies: [NONCE_COOKIE],
    response: OAuthConnected,
    errors: [400, 403, 502],
  }),
}

export const connectorRoutes = (): RouteDef[] => Object.values(CONNECTOR_ROUTES)
