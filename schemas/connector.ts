import { Type as T } from '@sinclair/typebox'
import { Name, Namespace, Ref } from './common.ts'

/*
 * Connectors (an agent's enabled_connectors, OAuth in src/connectors/oauth.ts): an HTTP API described once — base URL, authentication, headers, timeout, retry —
 * and its typed operations, each a method + path with a JSON Schema over its parameters.
 */

/*
 * Nested fields with a default are Optional: a body may leave them out, and every read fills the
 * defaults in (`toRecord` applies Value.Default); code reading them still says what it assumes.
 */
/** Operation names become part of tool names (`connector__{ns}__{name}__{op}`): what LLM tool names allow. */
export const OPERATION_NAME_PATTERN = '^[A-Za-z0-9_-]{1,64}$'
export const OperationName = T.String({
  pattern: OPERATION_NAME_PATTERN,
  description: 'letters, digits, _ and -; at most 64 characters',
})

export const HttpMethod = T.Union(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'].map((m) => T.Literal(m)))
export const ParameterLocation = T.Union([
  T.Literal('path'),
  T.Literal('query'),
  T.Literal('header'),
  T.Literal('body'),
])

export const ConnectorOperation = T.Object(
  {
    name: OperationName,
    description: T.Optional(T.String({ default: '', maxLength: 4000 })),
    method: HttpMethod,
    path: T.String({
      minLength: 1,
      maxLength: 2048,
      pattern: '^/',
      description: 'appended to base_url; `{param}` segments are filled from path parameters',
    }),
    parameters: T.Optional(
      T.Record(T.String(), T.Unknown(), {
        default: { type: 'object', properties: {} },
        description:
          'a JSON Schema (type object) over every parameter of the operation; the call input is validated against it',
      }),
    ),
    locations: T.Optional(
      T.Record(T.String({ maxLength: 200 }), ParameterLocation, {
        default: {},
        description: 'where each parameter goes: path, query or header; parameters not listed go into the body',
      }),
    ),
    body_mapping: T.Optional(
      T.Union([T.Record(T.String({ maxLength: 500 }), T.String({ maxLength: 200 })), T.Null()], {
        default: null,
        description:
          'outgoing body field (dotted path; `$` = the whole body) → parameter name; null: the body is the object of the body parameters',
      }),
    ),
    body_encoding: T.Optional(
      T.Union([T.Literal('json'), T.Literal('form')], {
        default: 'json',
        description: 'application/json or application/x-www-form-urlencoded',
      }),
    ),
  },
  { additionalProperties: false },
)

export const OAuth2Settings = T.Object(
  {
    authorization_url: T.String({ maxLength: 2048, description: 'the provider authorization endpoint (HTTPS)' }),
    token_url: T.String({ maxLength: 2048, description: 'the provider token endpoint (HTTPS)' }),
    revocation_url: T.Optional(
      T.String({
        maxLength: 2048,
        description: 'RFC 7009 revocation endpoint; tokens are revoked there when the user disconnects',
      }),
    ),
    client_id: T.String({ minLength: 1, maxLength: 500 }),
    scopes: T.Optional(T.Array(T.String({ minLength: 1, maxLength: 200 }), { default: [], maxItems: 100 })),
    redirect_uri: T.Optional(
      T.String({
        maxLength: 2048,
        description: 'the platform callback as the provider knows it (default: https://DOMAIN/api/v1/oauth/callback)',
      }),
    ),
  },
  { additionalProperties: false },
)

export const ConnectorAuth = T.Object(
  {
    type: T.Optional(
      T.Union([T.Literal('none'), T.Literal('bearer'), T.Literal('basic'), T.Literal('api_key'), T.Literal('oauth2')], {
        default: 'none',
      }),
    ),
    secret: T.Optional(Ref),
    header: T.Optional(
      T.String({
        minLength: 1,
        maxLength: 200,
        pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$",
        description: 'api_key: header name (default X-API-Key)',
      }),
    ),
    query_param: T.Optional(
      T.String({
        minLength: 1,
        maxLength: 200,
        description: 'api_key: send the key as this query parameter instead of a header',
      }),
    ),
    username: T.Optional(
      T.String({
        maxLength: 500,
        description: 'basic: the user name (the secret is the password); absent: the secret holds `user:password`',
      }),
    ),
    oauth2: T.Optional(OAuth2Settings),
  },
  {
    additionalProperties: false,
    description:
      'the secret (`<namespace>/<name>` of a secret) holds the token, password, API key or OAuth client secret',
  },
)

export const ConnectorRetry = T.Object(
  {
    max_retries: T.Optional(
      T.Integer({
        minimum: 0,
        maximum: 10,
        default: 0,
        description: 'clamped to CONNECTOR_MAX_RETRIES; idempotent methods only',
      }),
    ),
    backoff_ms: T.Optional(
      T.Integer({ minimum: 0, maximum: 60_000, default: 200, description: 'first delay; doubles per retry' }),
    ),
    on_status: T.Optional(
      T.Array(T.Integer({ minimum: 100, maximum: 599 }), { default: [502, 503, 504], maxItems: 50 }),
    ),
  },
  { additionalProperties: false },
)

export const ConnectorSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000 }),
    base_url: T.String({
      minLength: 1,
      maxLength: 2048,
      description: 'HTTPS unless an admin listed the host in CONNECTOR_HTTP_HOSTS',
    }),
    auth: T.Object(ConnectorAuth.properties, { additionalProperties: false, default: { type: 'none' } }),
    headers: T.Record(T.String({ maxLength: 200 }), T.String({ maxLength: 8192 }), {
      default: {},
      description: 'sent with every call',
    }),
    timeout_seconds: T.Number({
      default: 30,
      exclusiveMinimum: 0,
      maximum: 3600,
      description: 'per attempt; clamped to CONNECTOR_TIMEOUT_SECONDS',
    }),
    retry: T.Object(ConnectorRetry.properties, {
      additionalProperties: false,
      default: { max_retries: 0, backoff_ms: 200, on_status: [502, 503, 504] },
    }),
    operations: T.Array(ConnectorOperation, {
      default: [],
      maxItems: 1000,
      description: 'at most CONNECTOR_MAX_OPERATIONS',
    }),
  },
  { additionalProperties: false },
)

// ---------------------------------------------------------------------------------------------
// Routes

export const ConnectorParams = T.Object({ namespace: Name, name: Name })
export const OperationParams = T.Object({ namespace: Name, name: Name, op: OperationName })

export const ConnectorImportBody = T.Object(
  {
    namespace: T.Optional(Namespace),
    name: Name,
    openapi: T.Union([
      T.String({ minLength: 1, description: 'YAML or JSON text' }),
      T.Record(T.String(), T.Unknown(), { description: 'the parsed document' }),
    ]),
    base_url: T.Optional(
      T.String({ minLength: 1, maxLength: 2048, description: 'default: the first `servers` entry' }),
    ),
    auth: T.Optional(ConnectorAuth),
    description: T.Optional(T.String({ maxLength: 4000 })),
    headers: T.Optional(T.Record(T.String({ maxLength: 200 }), T.String({ maxLength: 8192 }))),
    timeout_seconds: T.Optional(T.Number({ exclusiveMinimum: 0, maximum: 3600 })),
    retry: T.Optional(ConnectorRetry),
    /** Replace an existing connector of that name (its owner or an admin only). */
    replace: T.Optional(T.Boolean({ default: false })),
  },
  { additionalProperties: false },
)

export const ExecuteOperationBody = T.Object(
  { input: T.Optional(T.Record(T.String(), T.Unknown())) },
  { additionalProperties: false },
)

export const ExecuteOperationResult = T.Object(
  {
    status: T.Integer({ description: 'the upstream HTTP status' }),
    headers: T.Record(T.String(), T.String(), {
      description: 'upstream response headers (lower case; set-cookie dropped)',
    }),
    body: T.Unknown({
      description: 'parsed JSON when the upstream answered JSON, else text (base64 in `{base64}` for binary)',
    }),
  },
  { title: 'ConnectorResult' },
)

export const OAuthStartResult = T.Object(
  { authorization_url: T.String(), state: T.String(), expires_in: T.Integer() },
  { title: 'OAuthStart' },
)

export const OAuthCallbackQuery = T.Object({
  state: T.Optional(T.String({ maxLength: 200 })),
  code: T.Optional(T.String({ maxLength: 4096 })),
  error: T.Optional(T.String({ maxLength: 200 })),
  error_description: T.Optional(T.String({ maxLength: 2000 })),
})

export const OAuthConnected = T.Object(
  {
    status: T.Literal('connected'),
    connector: T.Object({ namespace: T.String(), name: T.String() }),
    scope: T.Union([T.String(), T.Null()]),
    expires_at: T.Union([T.String(), T.Null()]),
  },
  { title: 'OAuthConnected' },
)

export const OAuthTokenStatus = T.Object(
  {
    connected: T.Boolean(),
    scope: T.Union([T.String(), T.Null()]),
    expires_at: T.Union([T.String(), T.Null()]),
    has_refresh_token: T.Boolean(),
    updated_at: T.Union([T.String(), T.Null()]),
  },
  { title: 'OAuthTokenStatus' },
)
