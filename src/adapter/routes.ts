import {
  ChatCompletion,
  ChatCompletionRequestDoc,
  ModelList,
  ModelParams,
  ModelPathParams,
  OpenAiModel,
} from '../../schemas/openai-wire.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/*
 * The OpenAI-compatible adapter: `/adapters/openai/v1` with Chat Completions and the
 * model list. Request bodies are checked by the handler (src/adapter/wire.ts) so that every error
 * the service gives has OpenAI's shape `{error: {message, type, param, code}}`; the gateway only
 * checks that the body is a JSON object.
 *
 * Model ids hold `/` and `:` (`agent:demo/helper`, `fake/fake-model`). The openai clients
 * percent-encode the `/` (`agent:demo%2Fhelper`: one path segment, decoded by the gateway); the
 * two-segment route takes the id unencoded (`/models/agent:demo/helper`, curl, older clients). A
 * provider model whose own name has a `/` needs the encoded form.
 */
const base = { auth: true as const, target: 'rpc' as const, surface: 'adapter' as const, tags: ['OpenAI adapter'] }

export const ADAPTER_ROUTES = {
  adapterOpenaiChatCompletions: defineRoute({
    ...base,
    id: 'adapter.openai.chat-completions',
    method: 'POST',
    path: '/adapters/openai/v1/chat/completions',
    summary:
      'OpenAI Chat Completions against an agent (`agent:<namespace>/<name>`: its turn runs over the given messages in an ephemeral internal chat) or a provider model (`<provider>/<model>`: the provider directly, tools passed through). `stream: true` answers Server-Sent Events of chat.completion.chunk objects ending with `data: [DONE]`. Errors: `{error: {message, type, param, code}}`',
    body: ChatCompletionRequestDoc,
    response: ChatCompletion,
    errors: [400, 403, 404, 409, 422, 502, 504],
    stream: { format: 'openai', bodyFlag: 'stream' },
  }),
  adapterOpenaiModelsList: defineRoute({
    ...base,
    id: 'adapter.openai.models.list',
    method: 'GET',
    path: '/adapters/openai/v1/models',
    summary: 'The models the caller may use: agents it may chat with, provider models it may call',
    response: ModelList,
  }),
  adapterOpenaiModelsGet: defineRoute({
    ...base,
    id: 'adapter.openai.models.get',
    method: 'GET',
    path: '/adapters/openai/v1/models/{model_id}',
    summary: 'One model (the id percent-encoded: `agent:demo%2Fhelper`)',
    params: ModelParams,
    response: OpenAiModel,
    errors: [404],
  }),
  adapterOpenaiModelsGetPath: defineRoute({
    ...base,
    id: 'adapter.openai.models.get-path',
    method: 'GET',
    path: '/adapters/openai/v1/models/{owner}/{model}',
    summary: 'One model, the id unencoded (`/models/agent:demo/helper`, `/models/fake/fake-model`)',
    params: ModelPathParams,
    response: OpenAiModel,
    errors: [404],
  }),
}

export function adapterRoutes(): RouteDef[] {
  return Object.values(ADAPTER_ROUTES)
}
