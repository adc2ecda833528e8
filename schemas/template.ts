import { Type as T } from '@sinclair/typebox'
import { JsonSchemaObject, Nullable } from './common.ts'

/* Template fields and the render/send bodies. */
export const TemplateSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000 }),
    title: T.Union([T.String({ maxLength: 4000 }), T.Null()], {
      default: null,
      description: 'optional title template (the email subject); rendered as plain text',
    }),
    html_content: T.String({ maxLength: 65536, description: 'Jinja2 HTML template; output is HTML-escaped' }),
    text_content: T.Union([T.String({ maxLength: 65536 }), T.Null()], {
      default: null,
      description: 'optional plain-text template (the plain part of an email)',
    }),
    variable_schema: JsonSchemaObject,
  },
  { additionalProperties: false },
)

const Variables = T.Record(T.String(), T.Unknown(), {
  default: {},
  description: 'template variables, validated against variable_schema',
})

export const RenderBody = T.Object({ variables: T.Optional(Variables) }, { additionalProperties: false })

export const RenderResult = T.Object(
  { title: Nullable(T.String()), html_content: T.String(), text_content: Nullable(T.String()) },
  { title: 'RenderedTemplate' },
)

const Email = T.String({ format: 'email', maxLength: 320 })

export const SendBody = T.Object(
  {
    // a hard cap for the body's size; the configured limit (TEMPLATE_EMAIL_MAX_RECIPIENTS) is checked by the handler
    to: T.Union([Email, T.Array(Email, { minItems: 1, maxItems: 1000 })], {
      description: 'one address or a list (at most TEMPLATE_EMAIL_MAX_RECIPIENTS distinct addresses)',
    }),
    variables: T.Optional(Variables),
    // no line breaks: the display name goes into the From header
    from_name: T.Optional(T.String({ minLength: 1, maxLength: 200, pattern: '^[^\\r\\n\\u0000]*$' })),
  },
  { additionalProperties: false },
)

export const SendResult = T.Object(
  {
    status: T.Literal('sent'),
    message_id: T.String(),
    recipients: T.Array(T.String()),
    rejected: T.Array(T.String({ description: 'addresses the SMTP server refused' })),
  },
  { title: 'SentEmail' },
)
