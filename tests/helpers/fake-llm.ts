import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'

/*
 * The one fake of the suite: a local LLM provider speaking four wire protocols,
 * streaming and non-streaming, driven by scripted replies.
 *
 *   POST /v1/chat/completions          OpenAI Chat Completions      api_endpoint `${url}/v1`
 *   POST /mistral/v1/chat/completions  Mistral (OpenAI-like)        api_endpoint `${url}/mistral/v1`
 *   POST /v1/messages                  Anthropic Messages           api_endpoint `${url}`
 *   POST /api/chat                     Ollama (NDJSON)              api_endpoint `${url}`
 *
 * Every request takes the next scripted reply from one queue (`push`), or the default reply when
 * the queue is empty, and is recorded (`requests`: protocol, path, headers, parsed body) so tests
 * can assert on what the platform sent. Requests are checked roughly like the real APIs do (e.g.
 * Anthropic: no system role in messages, alternating roles, tool_result ids; Mistral: 9-character
 * tool call ids, no stream_options) and refused with the provider's error shape; the reply is
 * consumed either way.
 *
 * Standalone, for benchmarks:
 *   node --import tsx tests/helpers/fake-llm.ts --port 8099 [--zero-latency] [--first-byte-ms N] [--chunk-ms N] [--text "…"]
 * prints one JSON line `{"url": …, "port": …}` when listening and answers every request with the
 * fixed reply (default latency 50 ms before the head and 10 ms between chunks; --zero-latency: none).
 */

export type Protocol = 'openai' | 'anthropic' | 'mistral' | 'ollama'

export interface FakeToolCall {
  id?: string
  name: string
  /** JSON text or an object (stringified). */
  arguments: string | Record<string, unknown>
}

export interface FakeReply {
  /** Text chunks (a string is one chunk). */
  text?: string | string[]
  tool_calls?: FakeToolCall[]
  /** Pieces each tool call's arguments are streamed in (default 3; OpenAI and Anthropic; Mistral and Ollama send calls whole). */
  argument_chunks?: number
  /** OpenAI: interleave the argument pieces of parallel calls (routing by index). */
  interleave?: boolean
  /** `cost`: reported as OpenAI-compatible gateways (OpenRouter) do, `usage.cost` (OpenAI and Mistral wires only). */
  usage?: { prompt_tokens: number; completion_tokens: number; cost?: number }
  /** The protocol's own finish/stop reason (default: stop / end_turn, or the tool-call reason). */
  finish_reason?: string
  /** Answer this status and body (JSON-encoded unless a string) instead of a reply. */
  error?: { status: number; body?: unknown; headers?: Record<string, string> }
  /** Before the response head. */
  delay_ms?: number
  /** Between body chunks. */
  chunk_delay_ms?: number
  /** Never answer (the connection stays open until the client gives up). */
  hang?: boolean
  /** Send this many body frames, then nothing more (the connection stays open). */
  stall_after?: number
  /** Close the body after the content, without the protocol's terminal frames. */
  end_early?: boolean
  /** An error frame in the protocol's own shape after the content (OpenAI/Mistral `{error}`, Anthropic `event: error`, Ollama `{"error"}`). */
  stream_error?: { type: string; message: string }
  /** Send exactly these body chunks (malformed streams), with the protocol's streaming content type. */
  raw?: string | string[]
  /** Re-cut the streamed body into pieces of this many bytes (splits frames and UTF-8 sequences). */
  write_bytes?: number
}

export interface FakeRequest {
  protocol: Protocol
  path: string
  headers: http.IncomingHttpHeaders
  /** The parsed JSON body (the raw text when it is not JSON). */
  body: Record<string, unknown>
  stream: boolean
  /** The client closed the connection before the reply was complete (an aborted call). */
  closed_early?: boolean
}

export interface FakeLlm {
  url: string
  port: number
  requests: FakeRequest[]
  push(...replies: FakeReply[]): void
  /** The api_endpoint to configure for a provider type. */
  endpoint(protocol: Protocol): string
  /** The body of `POST /api/v1/llm-providers` that makes this fake, speaking OpenAI, the default provider (named `fake`). */
  provider(): {
    name: string
    provider_type: 'openai'
    api_endpoint: string
    api_key: string
    default_model: string
    is_default: true
  }
  /** Clears the queue and the recorded requests. */
  reset(): void
  close(): Promise<void>
}

export interface FakeLlmOptions {
  port?: number
  host?: string
  /** Used when the queue is empty. */
  defaultReply?: FakeReply
  /** Default true; false keeps `requests` empty (long benchmark runs). */
  record?: boolean
}

const DEFAULT_REPLY: FakeReply = { text: ['Hello', ' from', ' the', ' fake', ' LLM.'] }

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

type Json = Record<string, unknown>
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

// ---------------------------------------------------------------------------------------------
// Request checks (a rough imitation of the real APIs' 400s)

function checkOpenAi(body: Json, mistral: boolean): string | null {
  if (typeof body['model'] !== 'string') return 'model is required'
  if (!Array.isArray(body['messages'])) return 'messages must be an array'
  if (mistral && body['stream_options'] !== undefined) return 'stream_options: Extra inputs are not permitted'
  const ids = new Set<string>()
  for (const m of body['messages'] as unknown[]) {
    if (!isRecord(m) || !['system', 'user', 'assistant', 'tool'].includes(String(m['role'])))
      return 'invalid message role'
    if (Array.isArray(m['tool_calls'])) {
      for (const c of m['tool_calls'] as Json[]) {
        const id = String(c['id'])
        if (mistral && !/^[a-zA-Z0-9]{9}$/.test(id))
          return `Tool call id was ${id} but must be a-z, A-Z, 0-9, with a length of 9.`
        if (!isRecord(c['function']) || typeof c['function']['arguments'] !== 'string')
          return 'tool call arguments must be a string'
        ids.add(id)
      }
    }
    if (m['role'] === 'tool' && !ids.has(String(m['tool_call_id'])))
      return `tool_call_id ${String(m['tool_call_id'])} does not answer a preceding tool call`
  }
  return null
}

function checkAnthropic(body: Json, headers: http.IncomingHttpHeaders): string | null {
  if (headers['anthropic-version'] === undefined) return 'anthropic-version: header is required'
  if (typeof body['model'] !== 'string') return 'model: Field required'
  if (typeof body['max_tokens'] !== 'number') return 'max_tokens: Field required'
  if (body['system'] !== undefined && typeof body['system'] !== 'string' && !Array.isArray(body['system']))
    return 'system: must be a string or a list of blocks'
  const messages = body['messages']
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required'
  let previous: Json | null = null
  for (const m of messages as unknown[]) {
    if (!isRecord(m)) return 'messages: each message must be an object'
    if (m['role'] !== 'user' && m['role'] !== 'assistant')
      return `messages: Unexpected role "${String(m['role'])}". Allowed roles are "user" and "assistant"; use the top-level system parameter for system prompts`
    if (previous === null && m['role'] !== 'user') return 'messages: first message must use the "user" role'
    if (previous !== null && previous['role'] === m['role'])
      return 'messages: roles must alternate between "user" and "assistant"'
    const blocks = typeof m['content'] === 'string' ? [{ type: 'text', text: m['content'] }] : m['content']
    if (!Array.isArray(blocks)) return 'messages: content must be a string or a list'
    for (const b of blocks as Json[]) {
      if (b['type'] === 'text' && b['text'] === '') return 'messages: text content blocks must be non-empty'
      if (b['type'] === 'tool_use' && !isRecord(b['input'])) return 'messages: tool_use.input must be an object'
      if (b['type'] === 'tool_result') {
        const prev = previous === null ? [] : Array.isArray(previous['content']) ? (previous['content'] as Json[]) : []
        if (!prev.some((p) => p['type'] === 'tool_use' && p['id'] === b['tool_use_id'])) {
          return `messages: tool_result block(s) provided when previous message does not contain matching tool_use ids (${String(b['tool_use_id'])})`
        }
      }
    }
    previous = m
  }
  return null
}

function checkOllama(body: Json): string | null {
  if (typeof body['model'] !== 'string') return 'model is required'
  if (!Array.isArray(body['messages'])) return 'messages must be an array'
  for (const m of body['messages'] as unknown[]) {
    if (!isRecord(m)) return 'invalid message'
    if (m['content'] !== undefined && typeof m['content'] !== 'string')
      return 'json: cannot unmarshal into Go struct field Message.messages.content of type string'
    if (Array.isArray(m['tool_calls'])) {
      for (const c of m['tool_calls'] as Json[]) {
        if (!isRecord(c['function']) || !isRecord(c['function']['arguments']))
          return 'json: cannot unmarshal string into Go struct field ToolCallFunction.arguments'
      }
    }
  }
  return null
}

function errorBody(protocol: Protocol, status: number, message: string): Json {
  switch (protocol) {
    case 'anthropic':
      return {
        type: 'error',
        error: {
          type: status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error',
          message,
        },
      }
    case 'ollama':
      return { error: message }
    case 'mistral':
      return { object: 'error', message, type: 'invalid_request_error', code: status }
    default:
      return { error: { message, type: 'invalid_request_error', param: null, code: null } }
  }
}

// ---------------------------------------------------------------------------------------------
// Replies

interface Plan {
  texts: string[]
  calls: { id: string; name: string; args: string }[]
  usage: { prompt_tokens: number; completion_tokens: number; cost?: number }
}

let idCounter = 0
function plan(reply: FakeReply, protocol: Protocol): Plan {
  const texts = reply.text === undefined ? [] : typeof reply.text === 'string' ? [reply.text] : reply.text
  const calls = (reply.tool_calls ?? []).map((c) => {
    const n = ++idCounter
    const id =
      c.id ??
      (protocol === 'mistral'
        ? `M${String(n).padStart(8, '0')}`
        : protocol === 'anthropic'
          ? `toolu_fake${String(n)}`
          : `call_fake${String(n)}`)
    return { id, name: c.name, args: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) }
  })
  return {
    texts,
    calls,
    usage: reply.usage ?? { prompt_tokens: 12, completion_tokens: Math.max(1, texts.length + calls.length) },
  }
}

/** Splits `s` into `n` pieces (some may be empty when s is short). */
function pieces(s: string, n: number): string[] {
  const size = Math.ceil(s.length / Math.max(1, n))
  const out: string[] = []
  for (let i = 0; i < Math.max(1, n); i++) out.push(s.slice(i * size, (i + 1) * size))
  return out.filter((p, i) => p !== '' || i === 0)
}

const sse = (data: unknown) => `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`
const sseNamed = (event: string, data: Json) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

/** Body frames for a streamed reply: [content frames, terminal frames]. */
function streamFrames(
  protocol: Protocol,
  reply: FakeReply,
  p: Plan,
  model: string,
  includeUsage: boolean,
): [string[], string[]] {
  const created = Math.floor(Date.now() / 1000)
  const split = reply.argument_chunks ?? 3
  switch (protocol) {
    case 'openai':
    case 'mistral': {
      const id = `chatcmpl-fake${String(++idCounter)}`
      const chunk = (delta: Json, finish: string | null = null, extra: Json = {}) =>
        sse({
          id,
          object: 'chat.completion.chunk',
          created,
          model,
          choices: [{ index: 0, delta, finish_reason: finish }],
          ...extra,
        })
      const content = [chunk({ role: 'assistant', content: '' })]
      for (const t of p.texts) content.push(chunk({ content: t }))
      if (protocol === 'mistral') {
        if (p.calls.length > 0)
          content.push(
            chunk({
              tool_calls: p.calls.map((c, index) => ({
                id: c.id,
                type: 'function',
                function: { name: c.name, arguments: c.args },
                index,
              })),
            }),
          )
      } else {
        const argPieces = p.calls.map((c) => pieces(c.args, split))
        const head = (i: number) => {
          const c = p.calls[i] as Plan['calls'][number]
          return chunk({
            tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }],
          })
        }
        const piece = (i: number, a: string) => chunk({ tool_calls: [{ index: i, function: { arguments: a } }] })
        if (reply.interleave === true) {
          p.calls.forEach((_c, i) => content.push(head(i)))
          const longest = Math.max(0, ...argPieces.map((a) => a.length))
          for (let k = 0; k < longest; k++)
            argPieces.forEach((a, i) => (a[k] === undefined ? undefined : content.push(piece(i, a[k] as string))))
        } else {
          argPieces.forEach((a, i) => {
            content.push(head(i))
            for (const x of a) content.push(piece(i, x))
          })
        }
      }
      const finish = reply.finish_reason ?? (p.calls.length > 0 ? 'tool_calls' : 'stop')
      const usage = {
        prompt_tokens: p.usage.prompt_tokens,
        completion_tokens: p.usage.completion_tokens,
        total_tokens: p.usage.prompt_tokens + p.usage.completion_tokens,
        ...(p.usage.cost === undefined ? {} : { cost: p.usage.cost }),
      }
      const terminal =
        protocol === 'mistral'
          ? [chunk({ content: '' }, finish, { usage }), sse('[DONE]')]
          : [
              chunk({}, finish),
              ...(includeUsage
                ? [sse({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })]
                : []),
              sse('[DONE]'),
            ]
      return [content, terminal]
    }
    case 'anthropic': {
      const content = [
        sseNamed('message_start', {
          type: 'message_start',
          message: {
            id: `msg_fake${String(++idCounter)}`,
            type: 'message',
            role: 'assistant',
            content: [],
            model,
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: p.usage.prompt_tokens, output_tokens: 1 },
          },
        }),
      ]
      let index = 0
      if (p.texts.length > 0) {
        content.push(
          sseNamed('content_block_start', {
            type: 'content_block_start',
            index,
            content_block: { type: 'text', text: '' },
          }),
        )
        content.push(sseNamed('ping', { type: 'ping' }))
        for (const t of p.texts)
          content.push(
            sseNamed('content_block_delta', {
              type: 'content_block_delta',
              index,
              delta: { type: 'text_delta', text: t },
            }),
          )
        content.push(sseNamed('content_block_stop', { type: 'content_block_stop', index }))
        index++
      }
      for (const c of p.calls) {
        content.push(
          sseNamed('content_block_start', {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} },
          }),
        )
        content.push(
          sseNamed('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: '' },
          }),
        )
        for (const x of pieces(c.args, split))
          content.push(
            sseNamed('content_block_delta', {
              type: 'content_block_delta',
              index,
              delta: { type: 'input_json_delta', partial_json: x },
            }),
          )
        content.push(sseNamed('content_block_stop', { type: 'content_block_stop', index }))
        index++
      }
      const stop = reply.finish_reason ?? (p.calls.length > 0 ? 'tool_use' : 'end_turn')
      return [
        content,
        [
          sseNamed('message_delta', {
            type: 'message_delta',
            delta: { stop_reason: stop, stop_sequence: null },
            usage: { output_tokens: p.usage.completion_tokens },
          }),
          sseNamed('message_stop', { type: 'message_stop' }),
        ],
      ]
    }
    case 'ollama': {
      const line = (o: Json) => `${JSON.stringify({ model, created_at: new Date().toISOString(), ...o })}\n`
      const content = p.texts.map((t) => line({ message: { role: 'assistant', content: t }, done: false }))
      if (p.calls.length > 0) {
        content.push(
          line({
            message: {
              role: 'assistant',
              content: '',
              tool_calls: p.calls.map((c) => ({
                function: { name: c.name, arguments: JSON.parse(c.args) as unknown },
              })),
            },
            done: false,
          }),
        )
      }
      const terminal = [
        line({
          message: { role: 'assistant', content: '' },
          done: true,
          done_reason: reply.finish_reason ?? 'stop',
          total_duration: 1000,
          load_duration: 10,
          prompt_eval_count: p.usage.prompt_tokens,
          eval_count: p.usage.completion_tokens,
        }),
      ]
      return [content, terminal]
    }
  }
}

function streamErrorFrame(protocol: Protocol, e: { type: string; message: string }): string {
  switch (protocol) {
    case 'anthropic':
      return sseNamed('error', { type: 'error', error: { type: e.type, message: e.message } })
    case 'ollama':
      return `${JSON.stringify({ error: e.message })}\n`
    default:
      return sse({ error: { message: e.message, type: e.type, code: null } })
  }
}

function nonStreamBody(protocol: Protocol, reply: FakeReply, p: Plan, model: string): Json {
  const text = p.texts.join('')
  const usage = {
    prompt_tokens: p.usage.prompt_tokens,
    completion_tokens: p.usage.completion_tokens,
    total_tokens: p.usage.prompt_tokens + p.usage.completion_tokens,
    ...(p.usage.cost === undefined ? {} : { cost: p.usage.cost }),
  }
  switch (protocol) {
    case 'openai':
    case 'mistral':
      return {
        id: `chatcmpl-fake${String(++idCounter)}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: text === '' && p.calls.length > 0 ? null : text,
              ...(p.calls.length > 0
                ? {
                    tool_calls: p.calls.map((c) => ({
                      id: c.id,
                      type: 'function',
                      function: { name: c.name, arguments: c.args },
                    })),
                  }
                : {}),
            },
            finish_reason: reply.finish_reason ?? (p.calls.length > 0 ? 'tool_calls' : 'stop'),
          },
        ],
        usage,
      }
    case 'anthropic':
      return {
        id: `msg_fake${String(++idCounter)}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [
          ...(text === '' ? [] : [{ type: 'text', text }]),
          ...p.calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: JSON.parse(c.args) as unknown })),
        ],
        stop_reason: reply.finish_reason ?? (p.calls.length > 0 ? 'tool_use' : 'end_turn'),
        stop_sequence: null,
        usage: { input_tokens: p.usage.prompt_tokens, output_tokens: p.usage.completion_tokens },
      }
    case 'ollama':
      return {
        model,
        created_at: new Date().toISOString(),
        message: {
          role: 'assistant',
          content: text,
          ...(p.calls.length > 0
            ? {
                tool_calls: p.calls.map((c) => ({
                  function: { name: c.name, arguments: JSON.parse(c.args) as unknown },
                })),
              }
            : {}),
        },
        done: true,
        done_reason: reply.finish_reason ?? 'stop',
        prompt_eval_count: p.usage.prompt_tokens,
        eval_count: p.usage.completion_tokens,
      }
  }
}

// ---------------------------------------------------------------------------------------------
// Server

function route(method: string | undefined, path: string): Protocol | null {
  if (method !== 'POST') return null
  if (path === '/v1/chat/completions' || path === '/chat/completions') return 'openai'
  if (path === '/mistral/v1/chat/completions') return 'mistral'
  if (path === '/v1/messages') return 'anthropic'
  if (path === '/api/chat') return 'ollama'
  return null
}

function readAll(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
    req.on('error', reject)
  })
}

export async function startFakeLlm(options: FakeLlmOptions = {}): Promise<FakeLlm> {
  const queue: FakeReply[] = []
  const requests: FakeRequest[] = []
  const defaultReply = options.defaultReply ?? DEFAULT_REPLY

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] as string
    const protocol = route(req.method, path)
    const text = await readAll(req)
    if (protocol === null) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: `no route ${String(req.method)} ${path}` } }))
      return
    }
    let body: Json
    try {
      const parsed: unknown = JSON.parse(text)
      body = isRecord(parsed) ? parsed : { _raw: text }
    } catch {
      body = { _raw: text }
    }
    const stream = protocol === 'ollama' ? body['stream'] !== false : body['stream'] === true
    const record: FakeRequest = { protocol, path, headers: req.headers, body, stream }
    if (options.record !== false) requests.push(record)
    const reply = queue.shift() ?? defaultReply
    let closed = false
    res.on('close', () => {
      closed = true
      if (!res.writableEnded) record.closed_early = true
    })
    if (reply.hang === true) return
    if (reply.delay_ms !== undefined && reply.delay_ms > 0) await sleep(reply.delay_ms)
    if (closed) return

    if (reply.error !== undefined) {
      const b =
        reply.error.body ?? errorBody(protocol, reply.error.status, `scripted error ${String(reply.error.status)}`)
      res.writeHead(reply.error.status, {
        'content-type': typeof b === 'string' ? 'text/plain' : 'application/json',
        ...reply.error.headers,
      })
      res.end(typeof b === 'string' ? b : JSON.stringify(b))
      return
    }
    const problem =
      body['_raw'] !== undefined
        ? 'the body is not JSON'
        : protocol === 'anthropic'
          ? checkAnthropic(body, req.headers)
          : protocol === 'ollama'
            ? checkOllama(body)
            : checkOpenAi(body, protocol === 'mistral')
    if (problem !== null) {
      const status = protocol === 'mistral' ? 422 : 400
      res
        .writeHead(status, { 'content-type': 'application/json' })
        .end(JSON.stringify(errorBody(protocol, status, problem)))
      return
    }

    const model = typeof body['model'] === 'string' ? body['model'] : 'fake'
    const p = plan(reply, protocol)
    if (!stream && reply.raw === undefined) {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(nonStreamBody(protocol, reply, p, model)))
      return
    }
    let frames: string[]
    if (reply.raw !== undefined) frames = typeof reply.raw === 'string' ? [reply.raw] : reply.raw
    else {
      const includeUsage = isRecord(body['stream_options']) && body['stream_options']['include_usage'] === true
      const [content, terminal] = streamFrames(protocol, reply, p, model, includeUsage)
      frames = [
        ...content,
        ...(reply.stream_error === undefined ? [] : [streamErrorFrame(protocol, reply.stream_error)]),
        ...(reply.end_early === true || reply.stream_error !== undefined ? [] : terminal),
      ]
    }
    let chunks: Buffer[] = frames.map((f) => Buffer.from(f, 'utf8'))
    if (reply.write_bytes !== undefined && reply.write_bytes > 0) {
      const all = Buffer.concat(chunks)
      chunks = []
      for (let i = 0; i < all.length; i += reply.write_bytes) chunks.push(all.subarray(i, i + reply.write_bytes))
    }
    res.writeHead(200, {
      'content-type': protocol === 'ollama' ? 'application/x-ndjson' : 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
    })
    res.flushHeaders()
    const gap = reply.chunk_delay_ms ?? 0
    for (let i = 0; i < chunks.length; i++) {
      if (reply.stall_after !== undefined && i >= reply.stall_after) return
      if (i > 0 && gap > 0) await sleep(gap)
      if (closed) return
      res.write(chunks[i])
    }
    res.end()
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: String(err) } }))
    })
  })
  server.keepAliveTimeout = 5000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const url = `http://${options.host ?? '127.0.0.1'}:${String(port)}`
  return {
    url,
    port,
    requests,
    push: (...replies) => {
      queue.push(...replies)
    },
    endpoint: (protocol) => (protocol === 'openai' ? `${url}/v1` : protocol === 'mistral' ? `${url}/mistral/v1` : url),
    provider: () => ({
      name: 'fake',
      provider_type: 'openai',
      api_endpoint: `${url}/v1`,
      api_key: 'sk-fake',
      default_model: 'fake-model',
      is_default: true,
    }),
    reset: () => {
      queue.length = 0
      requests.length = 0
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

// ---------------------------------------------------------------------------------------------
// Standalone

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}

async function standalone(args: string[]): Promise<void> {
  const zero = args.includes('--zero-latency')
  const firstByte = zero ? 0 : Number(flag(args, '--first-byte-ms') ?? 50)
  const chunkMs = zero ? 0 : Number(flag(args, '--chunk-ms') ?? 10)
  const text = flag(args, '--text')
  const words = text === undefined ? (DEFAULT_REPLY.text as string[]) : text.split(/(?=\s)/)
  const fake = await startFakeLlm({
    port: Number(flag(args, '--port') ?? 0),
    host: flag(args, '--host') ?? '127.0.0.1',
    defaultReply: { text: words, delay_ms: firstByte, chunk_delay_ms: chunkMs },
    record: false,
  })
  process.stdout.write(`${JSON.stringify({ url: fake.url, port: fake.port })}\n`)
  const stop = () => {
    void fake.close().then(() => process.exit(0))
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  standalone(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${String(err)}\n`)
    process.exit(1)
  })
}
