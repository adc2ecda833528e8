import { IdParams, NamespacedParams } from '../../schemas/resources.ts'
import { RenderBody, RenderResult, SendBody, SendResult } from '../../schemas/template.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'
import { templateKind } from '../kinds/template/kind.ts'

/*
 * The template routes beyond the generic CRUD: by id (GET, PATCH, DELETE
 * /api/v1/templates/{id}), by name (GET …/by-name/{namespace}/{name}), and rendering/sending on
 * the runtime surface (/templates/{id}/render|send) with the same operations under /api/v1 too.
 */
const m = { surface: 'management', auth: true, target: 'rpc' } as const
const r = { surface: 'runtime', auth: true, target: 'rpc' } as const
const tags = ['Template']
const sendSummary =
  'Render a template and send it as email (`title` = subject, `html_content` = HTML part, `text_content` = plain part); needs platform.templates/<ns>/<name>.send'

export const TEMPLATE_ROUTES = {
  getById: defineRoute({
    ...m,
    tags,
    id: 'templates.get-by-id',
    method: 'GET',
    path: '/api/v1/templates/{id}',
    summary: 'Get a template by id',
    params: IdParams,
    response: templateKind.record,
    errors: [404],
  }),
  patchById: defineRoute({
    ...m,
    tags,
    id: 'templates.patch-by-id',
    method: 'PATCH',
    path: '/api/v1/templates/{id}',
    summary: 'Update a template by id',
    params: IdParams,
    body: templateKind.updateBody,
    response: templateKind.record,
    errors: [403, 404, 422],
  }),
  deleteById: defineRoute({
    ...m,
    tags,
    id: 'templates.delete-by-id',
    method: 'DELETE',
    path: '/api/v1/templates/{id}',
    summary: 'Delete a template by id',
    params: IdParams,
    status: 204,
    errors: [403, 404],
  }),
  getByName: defineRoute({
    ...m,
    tags,
    id: 'templates.get-by-name',
    method: 'GET',
    path: '/api/v1/templates/by-name/{namespace}/{name}',
    summary: 'Get a template by namespace and name',
    params: NamespacedParams,
    response: templateKind.record,
    errors: [404],
  }),
  render: defineRoute({
    ...r,
    tags,
    id: 'templates.render',
    method: 'POST',
    path: '/templates/{id}/render',
    summary: 'Render a template (HTML autoescaped, strict undefined, variables checked against variable_schema)',
    params: IdParams,
    body: RenderBody,
    response: RenderResult,
    errors: [404, 422],
  }),
  send: defineRoute({
    ...r,
    tags,
    id: 'templates.send',
    method: 'POST',
    path: '/templates/{id}/send',
    summary: sendSummary,
    params: IdParams,
    body: SendBody,
    response: SendResult,
    errors: [404, 422, 502, 503],
  }),
  renderV1: defineRoute({
    ...m,
    tags,
    id: 'templates.render-v1',
    method: 'POST',
    path: '/api/v1/templates/{id}/render',
    summary: 'Same as POST /templates/{id}/render',
    params: IdParams,
    body: RenderBody,
    response: RenderResult,
    errors: [404, 422],
  }),
  sendV1: defineRoute({
    ...m,
    tags,
    id: 'templates.send-v1',
    method: 'POST',
    path: '/api/v1/templates/{id}/send',
    summary: 'Same as POST /templates/{id}/send',
    params: IdParams,
    body: SendBody,
    response: SendResult,
    errors: [404, 422, 502, 503],
  }),
}

export const templateRoutes = (): RouteDef[] => Object.values(TEMPLATE_ROUTES)
