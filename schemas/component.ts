import { Type as T, type Static, type TObject } from '@sinclair/typebox'
import { Access, JsonSchemaObject, Name, Namespace, Nullable, RefPattern, Timestamp } from './common.ts'

/* Component fields and the shapes of the component routes (src/components/). */

export const Visibility = T.Union([T.Literal('private'), T.Literal('shared'), T.Literal('public')], {
  default: 'private',
  description:
    '`private`: only who may read it; `shared`: as private, and share links work; `public`: every signed-in user may list and render it (share links work too)',
})

export const ComponentSpec = T.Object(
  {
    title: T.String({ default: '', maxLength: 500 }),
    description: T.String({ default: '', maxLength: 4000 }),
    source_code: T.String({
      default: '',
      maxLength: 1_000_000,
      description:
        'JSX / TSX / JS; `export default` a React component. Imports: react, react-dom, react-dom/client, react/jsx-runtime, platform-ui',
    }),
    input_schema: JsonSchemaObject,
    enabled_agents: T.Array(RefPattern, { default: [] }),
    enabled_functions: T.Array(RefPattern, { default: [] }),
    enabled_queries: T.Array(RefPattern, { default: [] }),
    enabled_components: T.Array(RefPattern, { default: [] }),
    enabled_stores: T.Array(T.Object({ store: RefPattern, access: Access }, { additionalProperties: false }), {
      default: [],
    }),
    css_overrides: T.String({ default: '', maxLength: 200_000 }),
    visibility: Visibility,
  },
  { additionalProperties: false },
)
export type ComponentSpec = Static<typeof ComponentSpec>

export const ComponentParams = T.Object({ namespace: Namespace, name: Name })

/** `POST /api/v1/components/{ns}/{name}/compile` answer; `compiled_bundle` is the component field set by compilation. */
export const CompileResult = T.Object(
  {
    namespace: T.String(),
    name: T.String(),
    compiled_bundle: T.String({
      description: 'browser-ready JS (an IIFE; React and platform-ui are globals of the page)',
    }),
    bundle_bytes: T.Integer(),
    source_sha256: T.String(),
    compiled_at: Timestamp,
    warnings: T.Array(T.Object({ line: T.Integer(), column: T.Integer(), message: T.String() })),
  },
  { title: 'ComponentCompileResult' },
)

/** Runtime list: what the caller may render (readable ones and public ones). */
export const RenderableComponent = T.Object(
  {
    namespace: T.String(),
    name: T.String(),
    title: T.String(),
    description: T.String(),
    visibility: T.String(),
    owner_id: Nullable(T.String()),
    render_url: T.String(),
  },
  { title: 'RenderableComponent' },
)
export const RenderQuery = T.Object({
  input: T.Optional(
    T.String({
      maxLength: 16_384,
      description: 'JSON object handed to the component as `input`, validated against its input_schema',
    }),
  ),
})

// Share links (docs/connectors-and-components.md)
export const ShareCreateBody = T.Object(
  {
    expires_in: T.Optional(
      T.Integer({
        minimum: 1,
        maximum: 10 * 365 * 86_400,
        description: 'seconds until the link stops working; absent = never',
      }),
    ),
    max_views: T.Optional(
      T.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'renders the link allows; absent = unlimited' }),
    ),
  },
  { additionalProperties: false },
)
export const Share = T.Object(
  {
    token: T.String(),
    url: T.String({
      description: 'the page to open: `https://<DOMAIN>/components/shared/<token>` (a path when DOMAIN is unset)',
    }),
    expires_at: Nullable(Timestamp),
    max_views: Nullable(T.Integer()),
    views: T.Integer(),
    created_at: Timestamp,
  },
  { title: 'ComponentShare' },
)
export const ShareParams = T.Object({
  namespace: Namespace,
  name: Name,
  token: T.String({ pattern: '^cs_[A-Za-z0-9_-]{20,100}$', maxLength: 103 }),
})
export const SharedPageParams = T.Object({ token: T.String({ minLength: 1, maxLength: 200 }) })
/** An embedded component's page (a component of the embedding page's enabled_components, in a nested frame). */
export const EmbedQuery = T.Object({
  ticket: T.String({ pattern: '^cvt_[A-Za-z0-9_-]{40,16384}$', description: 'the view ticket of the embedding page' }),
  input: T.Optional(
    T.String({
      maxLength: 16_384,
      description: 'JSON object handed to the embedded component as `input`, validated against its input_schema',
    }),
  ),
})

// Proxies: the bodies of each area; the page proxies add `ticket`.
export const ProxyFunctionBody = T.Object(
  {
    input: T.Unknown({ description: "validated against the function's input_schema" }),
    timeout: T.Optional(T.Integer({ minimum: 1, maximum: 86_400 })),
  },
  { additionalProperties: false },
)
export const ProxyAgentBody = T.Object(
  {
    message: T.String({ minLength: 1, maxLength: 1_000_000 }),
    session_key: T.Optional(
      T.String({
        minLength: 1,
        maxLength: 200,
        description: 'scoped to the component (and, on a share page, to the view)',
      }),
    ),
    reset: T.Optional(T.Boolean()),
    input: T.Optional(T.Record(T.String(), T.Unknown())),
  },
  { additionalProperties: false },
)
export const ProxyQueryBody = T.Object(
  { input: T.Optional(T.Record(T.String(), T.Unknown())) },
  { additionalProperties: false },
)
export const ProxyStateBody = T.Object(
  {
    store: Name,
    action: T.Union([T.Literal('list'), T.Literal('get'), T.Literal('set'), T.Literal('delete')]),
    key: T.Optional(T.String({ minLength: 1, maxLength: 500 })),
    value: T.Optional(T.Unknown()),
  },
  { additionalProperties: false },
)

export const ProxyTargetParams = T.Object({
  namespace: Namespace,
  name: Name,
  target_namespace: Namespace,
  target_name: Name,
})
export const ProxyStateParams = T.Object({ namespace: Namespace, name: Name, target_namespace: Namespace })
export const PageProxyTargetParams = T.Object({ target_namespace: Namespace, target_name: Name })
export const PageProxyStateParams = T.Object({ target_namespace: Namespace })

export const Ticket = T.String({
  pattern: '^cvt_[A-Za-z0-9_-]{40,16384}$',
  description:
    'the view ticket of the rendered page (window.PlatformUI holds it; sealed by the platform, opaque to the page); valid COMPONENT_VIEW_TICKET_SECONDS',
})

/** An area's body plus the page's view ticket. */
export const withTicket = (body: TObject): TObject =>
  T.Object({ ...body.properties, ticket: Ticket }, { additionalProperties: false })
