import { Type as T } from '@sinclair/typebox'
import { Access, Icon, JsonSchemaObject, Ref, RefPattern, Uuid } from './common.ts'

/* Agent fields, in the snake_case of the JSON API. */
const Message = T.Object(
  {
    role: T.Union([T.Literal('system'), T.Literal('user'), T.Literal('assistant')]),
    content: T.String({ maxLength: 200_000 }),
  },
  { additionalProperties: false },
)
const Hook = T.Object(
  {
    function: Ref,
    async: T.Boolean({ default: false, description: 'fire-and-forget' }),
    on_timeout: T.Union([T.Literal('block'), T.Literal('passthrough')], {
      default: 'passthrough',
      description:
        'sync hooks only: whether a hook that raises or times out blocks the message or lets it pass (a hook that cannot run always blocks)',
    }),
  },
  { additionalProperties: false },
)
const ParamValues = T.Record(T.String(), T.Record(T.String(), T.Unknown()))

export const AgentSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000 }),
    llm_provider_id: T.Union([Uuid, T.Null()], {
      default: null,
      description: 'null means the system default provider',
    }),
    model: T.Union([T.String({ minLength: 1, maxLength: 200 }), T.Null()], { default: null }),
    system_prompt: T.String({
      default: '',
      maxLength: 200_000,
      description: 'template rendered with the chat input variables',
    }),
    temperature: T.Number({ default: 0.7, minimum: 0, maximum: 2 }),
    max_tokens: T.Union([T.Integer({ minimum: 1 }), T.Null()], { default: null }),
    input_schema: JsonSchemaObject,
    output_schema: JsonSchemaObject,
    initial_messages: T.Array(Message, { default: [] }),
    enabled_functions: T.Array(RefPattern, { default: [] }),
    function_parameters: T.Record(T.String(), T.Record(T.String(), T.Unknown()), {
      default: {},
      description: 'function reference → parameter → value (values may be templates)',
    }),
    enabled_agents: T.Array(RefPattern, { default: [] }),
    enabled_skills: T.Array(
      T.Union([
        RefPattern,
        T.Object({ skill: RefPattern, preload: T.Boolean({ default: false }) }, { additionalProperties: false }),
      ]),
      { default: [] },
    ),
    enabled_queries: T.Array(RefPattern, { default: [] }),
    query_parameters: T.Record(
      T.String(),
      T.Record(
        T.String(),
        T.Object({ value: T.Unknown(), locked: T.Boolean({ default: false }) }, { additionalProperties: false }),
      ),
      { default: {} },
    ),
    enabled_collections: T.Array(
      T.Union([RefPattern, T.Object({ collection: RefPattern, access: Access }, { additionalProperties: false })]),
      { default: [] },
    ),
    enabled_stores: T.Array(T.Object({ store: RefPattern, access: Access }, { additionalProperties: false }), {
      default: [],
    }),
    enabled_connectors: T.Array(
      T.Object(
        {
          connector: RefPattern,
          operations: T.Array(T.String({ minLength: 1, maxLength: 200 }), { default: [] }),
          parameters: T.Optional(ParamValues),
        },
        { additionalProperties: false },
      ),
      { default: [] },
    ),
    enabled_mcp_servers: T.Array(
      T.Object(
        {
          server: RefPattern,
          tools: T.Optional(
            T.Array(T.String({ minLength: 1, maxLength: 200 }), {
              default: [],
              description: "the server's tool names to offer; absent or empty: all of them",
            }),
          ),
          parameters: T.Optional(
            T.Record(T.String(), T.Record(T.String(), T.Unknown()), {
              description:
                'tool → argument → value, locked: hidden from the LLM and always sent (string values are templates over the chat input)',
            }),
          ),
        },
        { additionalProperties: false },
      ),
      { default: [], description: 'remote MCP servers whose tools the agent uses (docs/connectors-and-components.md)' },
    ),
    hooks: T.Object(
      { on_user_message: T.Array(Hook, { default: [] }), on_assistant_message: T.Array(Hook, { default: [] }) },
      { additionalProperties: false, default: { on_user_message: [], on_assistant_message: [] } },
    ),
    system_tools: T.Array(
      T.Union([
        T.String({ minLength: 1, maxLength: 200 }),
        T.Object({ name: T.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: true }),
      ]),
      {
        default: [],
        description:
          'platform tools: a name, or {name, ...options}; current_time, search_files, render_template, schedule_message (options: docs/agents-and-chats.md#system-tools; unknown names are refused)',
      },
    ),
    icon: Icon,
  },
  { additionalProperties: false },
)
