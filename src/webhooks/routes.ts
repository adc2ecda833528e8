import { Type as T } from '@sinclair/typebox'
import { ListQuery } from '../../schemas/common.ts'
import {
  JsonObject,
  Webhook,
  WebhookCallQuery,
  WebhookCreateBody,
  WebhookParams,
  WebhookUpdateBody,
} from '../../schemas/triggers.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'
import { webhookRouteId } from '../api/webhook-wire.ts'

/*
 * Webhooks: CRUD under /api/v1/webhooks, addressed by the multi-segment path
 * (`greedyParam`: `/api/v1/webhooks/a/b/c` names the webhook `a/b/c`; `%2F` works too), and the
 * calls themselves at `/webhooks/<path>`, served by the gateway's webhook dispatcher
 * (gateway/webhooks.ts) and forwarded per method to `rpc.webhooks.trigger.<method>`.
 */
const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['Webhooks']

const List = T.Object(
  {
    ...ListQuery.properties,
    all: T.Optional(T.Boolean({ description: "admins: every user's webhooks (default: your own)" })),
  },
  { additionalProperties: false },
)

export const WEBHOOK_ROUTES = {
  list: defineRoute({
    ...m,
    tags,
    id: 'webhooks.list',
    method: 'GET',
    path: '/api/v1/webhooks',
    summary: 'Your webhooks (`all=true`: every webhook, admins)',
    query: List,
    response: T.Array(Webhook),
  }),
  create: defineRoute({
    ...m,
    tags,
    id: 'webhooks.create',
    method: 'POST',
    path: '/api/v1/webhooks',
    summary: 'Create a webhook: `{base}/webhooks/<path>` then runs the function (you must be allowed to run it)',
    status: 201,
    body: WebhookCreateBody,
    response: Webhook,
    errors: [403, 404, 409],
  }),
  get: defineRoute({
    ...m,
    tags,
    id: 'webhooks.get',
    method: 'GET',
    path: '/api/v1/webhooks/{path}',
    greedyParam: true,
    summary: 'One webhook by its path (multi-segment)',
    params: WebhookParams,
    response: Webhook,
    errors: [404],
  }),
  update: defineRoute({
    ...m,
    tags,
    id: 'webhooks.update',
    method: 'PATCH',
    path: '/api/v1/webhooks/{path}',
    greedyParam: true,
    summary: 'Change a webhook (path, method, target, auth, defaults)',
    params: WebhookParams,
    body: WebhookUpdateBody,
    response: Webhook,
    errors: [404, 409],
  }),
  delete: defineRoute({
    ...m,
    tags,
    id: 'webhooks.delete',
    method: 'DELETE',
    path: '/api/v1/webhooks/{path}',
    greedyParam: true,
    summary: 'Delete a webhook',
    params: WebhookParams,
    status: 204,
    errors: [404],
  }),
}

const CALL_SUMMARY =
  'Call a webhook with its configured method (others: 405). Input: the JSON object body (POST/PUT/PATCH) or the query parameters (GET/DELETE), over `default_values`. ' +
  'requires_auth: a Bearer token or API key of a user allowed to run the function; otherwise anonymous, run as the owner. ' +
  'Answers the function result (200), 502 `webhook.function_error`, 504 `webhook.function_timeout`; `?async=1` answers 202 {execution_id} at once. Header `x-execution-id`.'

const call = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE') =>
  defineRoute({
    surface: 'runtime',
    auth: false,
    target: 'rpc',
    webhook: true,
    tags,
    id: webhookRouteId(method),
    method,
    path: '/webhooks/{path}',
    summary: CALL_SUMMARY,
    params: WebhookParams,
    query: WebhookCallQuery,
    ...(method === 'POST' || method === 'PUT' || method === 'PATCH' ? { body: JsonObject } : {}),
    response: T.Unknown({ description: "the function's result" }),
    errors: [202, 401, 404, 405, 502, 504],
  })

export const WEBHOOK_CALL_ROUTES = {
  get: call('GET'),
  post: call('POST'),
  put: call('PUT'),
  patch: call('PATCH'),
  delete: call('DELETE'),
}

export function webhookRoutes(): RouteDef[] {
  return [...Object.values(WEBHOOK_ROUTES), ...Object.values(WEBHOOK_CALL_ROUTES)]
}
