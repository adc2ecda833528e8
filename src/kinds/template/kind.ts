import { TemplateSpec } from '../../../schemas/template.ts'
import { schemaIssues } from '../../kernel/json-schema.ts'
import { defineKind } from '../../resources/kind.ts'
import { templateIssues } from '../../templates/render.ts'

/*
 * Templates. The generic routes address them by `{namespace}/{name}` like every
 * kind; the by-id routes (GET/PATCH/DELETE /api/v1/templates/{id}, GET …/by-name/{ns}/{name})
 * and render/send live in src/template-api/.
 */
export const templateKind = defineKind({
  kind: 'template',
  plural: 'templates',
  title: 'Template',
  description: 'Jinja2 templates rendered through the hardened renderer and sent as email.',
  spec: TemplateSpec,
  validate: (s) => [
    ...templateIssues('/title', s.title),
    ...templateIssues('/html_content', s.html_content),
    ...templateIssues('/text_content', s.text_content),
    ...schemaIssues('/variable_schema', s.variable_schema),
  ],
})
