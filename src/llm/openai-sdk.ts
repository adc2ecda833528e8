import OpenAI from 'openai'
import { VERSION } from 'openai/version'
import { guardedLlmFetch } from './guarded-fetch.ts'
import type { TransportOptions } from './transport.ts'
import type { ProviderConfig } from './types.ts'

type BuildOptions = Parameters<OpenAI['buildRequest']>[0]
type Built = Awaited<ReturnType<OpenAI['buildRequest']>>

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype

const USER_AGENT = `OpenAI/JS ${VERSION}`

/**
 * The `openai` SDK with a cheaper request build for what the platform sends (a JSON body, no query,
 * no per-request headers): the headers as a plain object instead of the SDK's merge of six header
 * sets through WHATWG `Headers` (five `Headers` objects a call, every name and value validated by
 * undici's webidl converters on each append and delete: 13 % of the platform's CPU on the adapter's
 * provider path, bench/README.md). The headers sent are the SDK's minus its `X-Stainless-*`
 * telemetry: Accept, Content-Type, User-Agent, Authorization when the provider has a key, and
 * OpenAI-Organization / OpenAI-Project when set. Anything else (a query, a non-JSON body, headers
 * of the call, an idempotency header) goes through the SDK's own build unchanged. The rest of the
 * request's life (the fetch with its abort and deadline, errors, the SSE parser) is the SDK's.
 */
class LeanOpenAI extends OpenAI {
  private readonly urls = new Map<string, string>()
  /** False for a keyless provider (`defaultHeaders: {authorization: null}`; the SDK insists on an `apiKey`, 'none' then). */
  private readonly sendsKey: boolean
  /** Default headers beyond that `authorization: null`: the SDK's own build merges them. */
  private readonly otherDefaults: boolean

  constructor(opts: ConstructorParameters<typeof OpenAI>[0]) {
    super(opts)
    const defaults: unknown = opts?.defaultHeaders
    this.sendsKey = !(isPlainObject(defaults) && defaults['authorization'] === null)
    this.otherDefaults = defaults !== undefined && defaults !== null && !(isPlainObject(defaults) && Object.keys(defaults).every((name) => name.toLowerCase() === 'authorization'))
  }

  override async buildRequest(options: BuildOptions, extra?: { retryCount?: number }): Promise<Built> {
    const { query, body, headers, defaultBaseURL } = options
    const simple = (query === undefined || query === null) && headers === undefined && isPlainObject(body) && defaultBaseURL === undefined
    if (!simple || this.otherDefaults || this.idempotencyHeader !== undefined) {
      return super.buildRequest(options, extra)
    }
    let url = this.urls.get(options.path)
    if (url === undefined) {
      url = this.buildURL(options.path, undefined)
      this.urls.set(options.path, url)
    }
    const sent = openAiHeaders(this.sendsKey ? this.apiKey : null, this.organization, this.project)
    // The SDK types the headers as a Headers; what reads them is the SDK's debug formatter (a plain
    // object is what it expects besides) and the guarded fetch (headersOf), nothing else.
    const req: Built['req'] = { method: options.method, headers: sent as unknown as Headers, body: JSON.stringify(body) }
    if (options.signal !== undefined && options.signal !== null) req.signal = options.signal
    return { req, url, timeout: options.timeout ?? this.timeout }
  }
}

/**
 * The headers of an OpenAI request as the platform sends them, through the SDK (`LeanOpenAI`) or
 * without it (`jsonChatComplete`): the SDK's own minus its `X-Stainless-*` telemetry.
 */
export function openAiHeaders(apiKey: string | null, organization: string | null, project: string | null): Record<string, string> {
  const sent: Record<string, string> = { accept: 'application/json', 'content-type': 'application/json', 'user-agent': USER_AGENT }
  if (apiKey !== null) sent['authorization'] = `Bearer ${apiKey}`
  if (organization !== null) sent['openai-organization'] = organization
  if (project !== null) sent['openai-project'] = project
  return sent
}

/** setTimeout's limit: the SDK's own deadline stays out of the way of the guarded client's timeouts. */
const NO_SDK_TIMEOUT_MS = 2_147_000_000

/**
 * The `openai` SDK for one provider client, with the guarded fetch: no SDK retries (the turn
 * decides), no SDK timeout, no environment defaults (OPENAI_API_KEY, OPENAI_BASE_URL … are never
 * read: every setting comes from the provider resource). Built once per client, not per call.
 */
export function openAiSdk(baseURL: string, provider: ProviderConfig, options: TransportOptions, organization: string | null): OpenAI {
  const hasKey = provider.api_key !== null && provider.api_key !== ''
  return new LeanOpenAI({
    // The SDK insists on a key; a provider without one (a local server) sends no Authorization header.
    apiKey: hasKey ? provider.api_key : 'none',
    baseURL,
    organization,
    project: null,
    webhookSecret: null,
    maxRetries: 0,
    timeout: NO_SDK_TIMEOUT_MS,
    logLevel: 'off',
    ...(hasKey ? {} : { defaultHeaders: { authorization: null } }),
    fetch: guardedLlmFetch(options),
  })
}
