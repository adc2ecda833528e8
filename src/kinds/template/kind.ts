import { TemplateSpec } from '../../../schemas/template.ts'
import type { FieldIssue } from '../../kernel/errors.ts'
import { schemaIssues } from '../../functions/json-schema.ts'
import { defineKind } from '../../resources/kind.ts'
import { compileTemplate, TemplateError } from '../../templates/render.ts'

/** A template the hardened renderer refuses is refused when it is saved (422), not when it is sent. */
function templateIssue(path: string, source: string | null): FieldIssue[] {
  if (source === null) return []
  try {
    compileTemplate(source)
    return []
  } catch (err) {
    if (err instanceof TemplateError) return [{ path, message: `${err.code}: ${err.message}` }]
    throw err
  }
}

/*
 * Templates (SPEC.md §2.7). The generic routes address them by `{namespace}/{name}` like every
 * kind; the spec's by-id routes (GET/PATCH/DELETE /api/v1/templates/{id}, GET …/by-name/{ns}/{name})
 * and render/send live in src/template-api/.
 */
export const templateKind = defineKind({
  kind: 'template',
  plural: 'templates',
  title: 'Template',
  description: 'Jinja2 templates rendered through the hardened renderer and sent as email (SPEC.md §2.7).',
  spec: TemplateSpec,
  validate: (s) => [
    ...templateIssue('/title', s.title),
    ...templateIssue('/html_content', s.html_content),
    ...templateIssue('/text_content', s.text_content),
    ...schemaIssues('/variable_schema', s.variable_schema),
  ],
})
