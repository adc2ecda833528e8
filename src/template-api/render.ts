import type { Static } from '@sinclair/typebox'
import type { RenderResult, TemplateSpec } from '../../schemas/template.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { invalid } from '../kernel/errors.ts'
import { renderTemplate } from '../templates/render.ts'

/*
 * Renders a Template resource through the one hardened renderer (src/templates/render.ts), the
 * same one agents' system prompts use: variables are checked against `variable_schema` first,
 * undefined variables fail (strict), `html_content` is autoescaped, `title` and `text_content` are
 * plain text. Variables are data: `{{ }}` inside a variable's value is printed, never evaluated.
 */
export type Rendered = Static<typeof RenderResult>

export function renderTemplateResource(
  template: Static<typeof TemplateSpec>,
  variables: Record<string, unknown>,
): Rendered {
  const issues = validateAgainst(template.variable_schema, variables, '/variables')
  if (issues.length > 0)
    throw invalid("the variables do not match the template's variable_schema", issues, 'template.invalid_variables')
  return {
    title: template.title === null ? null : renderTemplate(template.title, variables),
    html_content: renderTemplate(template.html_content, variables, { autoescape: true }),
    text_content: template.text_content === null ? null : renderTemplate(template.text_content, variables),
  }
}
