import type { TSchema } from '@sinclair/typebox'
import { ErrorBody } from '../schemas/common.ts'
import type { RouteDef, Surface } from '../src/api/route.ts'

/*
 * OpenAPI 3.1 documents generated from the route list: the same TypeBox schemas that validate
 * requests are the documented ones (TypeBox schemas are JSON Schema, which 3.1 uses as is).
 */
const TITLES: Record<Surface, { title: string; description: string }> = {
  runtime: {
    title: 'Agent Platform — Runtime API',
    description: 'Authentication, chats, executions, state, files and discovery.',
  },
  management: {
    title: 'Agent Platform — Management API',
    description: 'CRUD on every resource and admin operations (/api/v1).',
  },
  adapter: {
    title: 'Agent Platform — OpenAI-compatible adapter',
    description: 'Chat completions and models mapped to agents and LLM providers.',
  },
}

const ERROR_TEXT: Record<number, string> = {
  400: 'Malformed request',
  401: 'Missing or invalid credentials',
  403: 'Not allowed',
  404: 'Not found (or not visible to the caller)',
  409: 'Already exists',
  413: 'Body too large',
  415: 'Body is not JSON',
  422: 'Validation failed',
  503: 'Service unavailable',
}

/** JSON Schema without TypeBox's symbol keys and without `$id`s (components are referenced by position). */
function clean(schema: TSchema): unknown {
  return JSON.parse(JSON.stringify(schema, (key, value: unknown) => (key === '$id' ? undefined : value)))
}

export function buildOpenApi(routes: readonly RouteDef[], surface: Surface, version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const r of routes.filter((x) => x.surface === surface)) {
    const parameters: unknown[] = []
    for (const [where, schema] of [
      ['path', r.params],
      ['query', r.query],
    ] as const) {
      if (schema === undefined) continue
      const required = new Set((schema.required as string[] | undefined) ?? [])
      for (const [name, s] of Object.entries(schema.properties)) {
        parameters.push({
          name,
          in: where,
          required: where === 'path' || required.has(name),
          schema: clean(s as TSchema),
        })
      }
    }
    for (const name of r.headers ?? [])
      parameters.push({ name, in: 'header', required: false, schema: { type: 'string' } })
    const status = String(r.status ?? 200)
    const responses: Record<string, unknown> = {
      [status]:
        r.response === undefined || status === '204'
          ? { description: 'Success' }
          : { description: 'Success', content: { 'application/json': { schema: clean(r.response) } } },
    }
    if (r.html === true)
      responses[status] =
        r.contentType === undefined
          ? { description: 'An HTML page', content: { 'text/html': { schema: { type: 'string' } } } }
          : {
              description: 'Text',
              content: { [r.contentType.split(';')[0] as string]: { schema: { type: 'string' } } },
            }
    if (r.stream !== undefined) {
      // gateway/sse.ts: the relayed channel; resumable by event id in the platform format.
      if (r.stream.format === 'platform') {
        parameters.push({
          name: 'Last-Event-ID',
          in: 'header',
          required: false,
          description: 'resume after this event id',
          schema: { type: 'integer', minimum: 0 },
        })
        if (r.query?.properties['last_id'] === undefined)
          parameters.push({
            name: 'last_id',
            in: 'query',
            required: false,
            description: 'resume after this event id (when the header cannot be set)',
            schema: { type: 'integer', minimum: 0 },
          })
      }
      const description =
        r.stream.format === 'platform'
          ? 'Server-Sent Events: every event has `id:` (resume with Last-Event-ID), `event:` and a JSON `data:` line; the stream ends after `done` or `error`; `: ping` comments keep it open'
          : r.stream.format === 'mcp'
            ? 'Server-Sent Events (MCP Streamable HTTP): each event an `id:` and one `data:` line holding a JSON-RPC message: `notifications/progress`, then the response, which ends the stream'
            : 'Server-Sent Events: `data:` lines holding chat.completion.chunk objects, ending with `data: [DONE]`'
      responses[status] = { description, content: { 'text/event-stream': { schema: { type: 'string' } } } }
    }
    const errors = new Set([
      ...(r.errors ?? []),
      ...(r.auth ? [401] : []),
      ...(r.body !== undefined ? [400, 413, 415, 422] : r.query !== undefined ? [422] : []),
    ])
    for (const code of [...errors].sort()) {
      responses[String(code)] = {
        description: ERROR_TEXT[code] ?? 'Error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
      }
    }
    const op: Record<string, unknown> = { operationId: r.id, summary: r.summary, tags: r.tags, parameters, responses }
    if (r.body !== undefined)
      op['requestBody'] = { required: true, content: { 'application/json': { schema: clean(r.body) } } }
    if (r.auth) op['security'] = [{ bearer: [] }]
    const methods = paths[r.path] ?? {}
    methods[r.method.toLowerCase()] = op
    paths[r.path] = methods
  }
  return {
    openapi: '3.1.0',
    info: { ...TITLES[surface], version },
    paths,
    components: {
      schemas: { ErrorBody: clean(ErrorBody) },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
  }
}
