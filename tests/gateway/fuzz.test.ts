import t from 'tap'
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { allRoutes } from '../../src/main.ts'
import { headOfStream } from '../helpers/stream-head.ts'
import type { RouteDef } from '../../src/api/route.ts'
import { KINDS } from '../../src/features.ts'
import { resourceRouteId } from '../../src/resources/routes.ts'
import { KIND_FIXTURES } from '../fixtures/kinds.ts'
import { startFakeLlm } from '../helpers/fake-llm.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * A schema-driven fuzz test over every route in allRoutes(): for each route, hostile variants of a
 * valid request are generated from its TypeBox schemas (NUL bytes, lone surrogates, huge strings,
 * deep nesting, wrong types, extra fields, huge numbers, empty bodies, unicode, `%00` and invalid
 * UTF-8 in path and query params). No answer may be a server error (>= 500): hostile input is the
 * client's fault and must be answered 4xx. The variant list is deterministic and bounded per route.
 */
const MAX_VARIANTS_PER_ROUTE = 150
const llm = await startFakeLlm()
t.teardown(() => llm.close())
const env = await startTestPlatform(t)

// ---- fixtures: one live object per path parameter, so body variants reach the database
const created = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
  const r = await env.request('POST', path, { body })
  if (r.status >= 300) throw new Error(`fixture ${path}: ${String(r.status)} ${r.text}`)
  return r.body as Record<string, unknown>
}
const provider = await created('/api/v1/llm-providers', {
  name: 'fuzz',
  provider_type: 'openai',
  api_endpoint: llm.endpoint('openai'),
  api_key: 'sk-fake',
  default_model: 'fake-model',
  is_default: true,
})
const fn = await created('/api/v1/functions', {
  namespace: 'fuzz',
  name: 'echo',
  code: 'def handler(input, context):\n    return input\n',
})
await created('/api/v1/agents', { namespace: 'fuzz', name: 'agent', system_prompt: 'You help.' })
await created('/api/v1/skills', { namespace: 'fuzz', name: 'skill', ...KIND_FIXTURES['skill']?.valid })
await created('/api/v1/secrets', { namespace: 'fuzz', name: 'secret', ...KIND_FIXTURES['secret']?.valid })
const chat = await created('/agents/fuzz/agent/chats', {})
const user = await env.createUser('fuzz-user@test.local')
await created('/api/v1/roles', { name: 'FuzzRole' })
const key = await created('/api/v1/api-keys', { name: 'fuzz-key', permissions: {} })
const dep = await created('/api/v1/dependencies', { package_name: 'fuzz-dep' })
const job = await created('/functions/fuzz/echo/execute/async', { input: { a: 1 } })
const jobId = String(job['job_id'] ?? job['execution_id'])

const kindOf = (route: RouteDef) =>
  route.path.startsWith('/api/v1/')
    ? KINDS.find((k) => route.id.startsWith(`${resourceRouteId(k, 'list').replace(/\.list$/, '')}.`))
    : undefined
const FIXTURE_NAME: Record<string, string> = {
  agent: 'agent',
  function: 'echo',
  skill: 'skill',
  secret: 'secret',
  llm_provider: 'fuzz',
}

/** A value for a path parameter that names a live object where one exists. */
function paramValue(route: RouteDef, name: string): string {
  const kind = kindOf(route)
  if (kind !== undefined) {
    if (name === 'namespace') return 'fuzz'
    if (name === 'name') return FIXTURE_NAME[kind.kind] ?? 'none'
    if (name === 'id') return kind.kind === 'llm_provider' ? String(provider['id']) : String(fn['id'])
  }
  if (name === 'namespace') return 'fuzz'
  if (name === 'name')
    return route.path.startsWith('/functions/') ? 'echo' : route.path.startsWith('/api/v1/roles') ? 'FuzzRole' : 'agent'
  if (name === 'job_id' || name === 'execution_id') return jobId
  if (name === 'channel_id') return 'nochannel'
  if (name === 'tool_call_id') return 'call1'
  if (name === 'container_name') return 'no-such-sandbox'
  if (name === 'model_id') return 'agent:fuzz%2Fagent'
  if (name === 'owner') return 'agent:fuzz'
  if (name === 'model') return 'agent'
  if (name === 'id') {
    if (route.path.startsWith('/chats')) return String(chat['id'])
    if (route.path.startsWith('/api/v1/api-keys')) return String(key['id'])
    if (route.path.startsWith('/api/v1/dependencies')) return String(dep['id'])
    return user.id
  }
  return 'x'
}

/** A valid body per route (the base every body variant mutates one field of). */
function baseBody(route: RouteDef): unknown {
  const kind = kindOf(route)
  if (kind !== undefined) {
    const fx = KIND_FIXTURES[kind.kind]
    if (route.id.endsWith('.create'))
      return kind.addressing === 'namespaced'
        ? { namespace: 'fuzz', name: 'fz', ...fx?.valid }
        : { name: 'fz', ...fx?.valid }
    return fx?.update ?? {}
  }
  const known: Record<string, unknown> = {
    'auth.login': { email: 'fuzz-login@test.local' },
    'auth.verify-otp': { session_id: '00000000-0000-4000-8000-000000000000', otp_code: '000000' },
    'auth.refresh': { refresh_token: 'not-a-token' },
    'auth.logout': { refresh_token: 'not-a-token' },
    'auth.exchange': { provider: 'p', subject: 's', email: 'fuzz-x@test.local' },
    'auth.check-permissions': { permissions: ['platform.system.read:all'] },
    'functions.execute': { input: { a: 1 } },
    'functions.execute-async': { input: { a: 1 } },
    'chats.create': { title: 't', input: {} },
    'chats.update': { title: 't' },
    'chats.send': { content: 'hi' },
    'chats.send-stream': { content: 'hi' },
    'chats.approve-tool': { approved: true },
    'agents.invoke': { message: 'hi', session_key: 's' },
    'containers.scale': { target: 1 },
    'workers.scale': { target_count: 1 },
    'users.create': { email: 'fuzz-new@test.local' },
    'users.update': { is_active: true },
    'roles.create': { name: 'FuzzOther' },
    'roles.update': { description: 'd' },
    'api-keys.create': { name: 'k', permissions: {} },
    'dependencies.create': { package_name: 'p' },
    'adapter.openai.chat-completions': { model: 'agent:fuzz/agent', messages: [{ role: 'user', content: 'hi' }] },
  }
  if (route.id in known) return known[route.id]
  try {
    return Value.Create(route.body as TSchema)
  } catch {
    return {}
  }
}

// ---- hostile values
const deepArray = (n: number) => '['.repeat(n) + ']'.repeat(n)
const deepObject = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)
// JSON.stringify overflows on values this deep: a marker string is swapped for the raw text
const DEEP_MARK = '\u0001deep\u0001'
const DEEP_JSON = deepObject(6_000)
const HUGE = 'x'.repeat(300_000)
const STRING_VALUES: [string, unknown][] = [
  ['NUL', 'a\u0000b'],
  ['lone high surrogate', '\ud800'],
  ['lone low surrogate', 'x\udc00y'],
  ['huge string', HUGE],
  ['unicode', '日本語 🙂 \u202e\u200b'],
  ['empty string', ''],
]
const OTHER_VALUES: [string, unknown][] = [
  ['number', 12345],
  ['huge number', 1e308],
  ['negative', -1],
  ['2^63', 2 ** 63],
  ['boolean', true],
  ['null', null],
  ['array', ['a\u0000']],
  ['object with NUL key', { 'k\u0000': 1 }],
  ['object with surrogate key', { '\udfff': 'v' }],
  ['deep value', DEEP_MARK],
]
const PARAM_VALUES: [string, string][] = [
  ['%00', '%00'],
  ['a%00b', 'a%00b'],
  ['invalid UTF-8', '%ED%A0%80'],
  ['huge', 'x'.repeat(4_000)],
  ['unicode', '%F0%9F%99%82'],
  ['%FF', '%FF'],
  // NATS subject tokens: a name must never become a wildcard or a new token
  ['*', '*'],
  ['>', '%3E'],
  ['a.b', 'a.b'],
  ['space', 'a%20b'],
]
const QUERY_VALUES: [string, string][] = [...PARAM_VALUES, ['-1', '-1'], ['1e400', '1e400'], ['NaN', 'NaN']]

/** JSON-schema field paths of a body schema (objects, unions of objects, array items), 3 levels deep. */
function fieldPaths(schema: TSchema | undefined, prefix: string[] = [], depth = 0): string[][] {
  if (schema === undefined || depth > 3) return []
  const s = schema as Record<string, unknown>
  const out: string[][] = []
  for (const member of [
    ...((s['anyOf'] as TSchema[] | undefined) ?? []),
    ...((s['allOf'] as TSchema[] | undefined) ?? []),
  ])
    out.push(...fieldPaths(member, prefix, depth))
  const props = s['properties'] as Record<string, TSchema> | undefined
  if (props !== undefined) {
    for (const [k, v] of Object.entries(props)) {
      out.push([...prefix, k])
      out.push(...fieldPaths(v, [...prefix, k], depth + 1))
    }
  }
  if (s['type'] === 'array' && s['items'] !== undefined)
    out.push(...fieldPaths(s['items'] as TSchema, [...prefix, '0'], depth + 1))
  const seen = new Set<string>()
  return out.filter((p) => (seen.has(p.join('.')) ? false : (seen.add(p.join('.')), true)))
}

function withField(base: unknown, path: string[], value: unknown): unknown {
  const root: unknown = structuredClone(base ?? {})
  let cur = (typeof root === 'object' && root !== null ? root : {}) as Record<string, unknown>
  const top = cur
  for (let i = 0; i < path.length - 1; i++) {
    const k = path[i] as string
    const next = cur[k]
    if (typeof next !== 'object' || next === null) cur[k] = /^\d+$/.test(path[i + 1] as string) ? [] : {}
    cur = cur[k] as Record<string, unknown>
  }
  cur[path[path.length - 1] as string] = value
  return top
}

interface Variant {
  label: string
  path: string
  body?: unknown
  rawBody?: string | Buffer
}

function pathWith(route: RouteDef, override?: { name: string; value: string }): string {
  return route.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    override?.name === name ? override.value : paramValue(route, name),
  )
}

function variantsOf(route: RouteDef): Variant[] {
  const out: Variant[] = []
  const base = route.body === undefined ? undefined : baseBody(route)
  const plain = pathWith(route)
  for (const name of [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string)) {
    for (const [label, value] of PARAM_VALUES)
      out.push({
        label: `param ${name}=${label}`,
        path: pathWith(route, { name, value }),
        ...(base === undefined ? {} : { body: base }),
      })
  }
  for (const q of Object.keys(route.query?.properties ?? {})) {
    for (const [label, value] of QUERY_VALUES)
      out.push({
        label: `query ${q}=${label}`,
        path: `${plain}?${q}=${value}`,
        ...(base === undefined ? {} : { body: base }),
      })
  }
  // a query the route does not declare is ignored, whatever it holds
  out.push({ label: 'undeclared query %00', path: `${plain}?zz=%00&namespace=%00` })
  if (route.body !== undefined) {
    out.push({ label: 'deep array body', path: plain, rawBody: deepArray(10_000) })
    out.push({ label: 'deep object body', path: plain, rawBody: deepObject(5_000) })
    out.push({ label: 'empty body', path: plain, rawBody: '' })
    out.push({ label: 'null body', path: plain, body: null })
    out.push({ label: 'string body', path: plain, body: 'a\u0000' })
    out.push({ label: 'array body', path: plain, body: [base] })
    out.push({ label: 'empty object', path: plain, body: {} })
    out.push({
      label: 'invalid UTF-8 body',
      path: plain,
      rawBody: Buffer.from([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]),
    })
    out.push({ label: 'extra field with NUL key', path: plain, body: { ...(base as object), 'extra\u0000': 1 } })
    out.push({ label: 'extra field', path: plain, body: { ...(base as object), zz_extra: 'v' } })
    const fields = fieldPaths(route.body)
    // one pass per hostile value over all fields (round-robin), so the cap keeps every value kind
    const values = [...STRING_VALUES, ...OTHER_VALUES]
    for (const [label, value] of values) {
      for (const f of fields)
        out.push({ label: `body.${f.join('.')}=${label}`, path: plain, body: withField(base, f, value) })
    }
  }
  if (out.length <= MAX_VARIANTS_PER_ROUTE) return out
  // deterministic thinning: keep the params/query/whole-body variants, spread the field variants evenly
  const head = out.filter((v) => !v.label.startsWith('body.'))
  const fieldVariants = out.filter((v) => v.label.startsWith('body.'))
  const room = Math.max(0, MAX_VARIANTS_PER_ROUTE - head.length)
  const step = fieldVariants.length / Math.max(1, room)
  const picked: Variant[] = []
  for (let i = 0; i < room && Math.floor(i * step) < fieldVariants.length; i++)
    picked.push(fieldVariants[Math.floor(i * step)] as Variant)
  // the NUL and surrogate variants of every field always run: they are the ones the database rejects
  const must = fieldVariants.filter((v) => /=(NUL|lone high surrogate)$/.test(v.label) && !picked.includes(v))
  return [...head, ...picked, ...must]
}

// Every route with every hostile variant (thousands of requests, growing with the platform).
t.setTimeout(900_000)

t.test('no hostile request answers a server error', async (t) => {
  const failures: string[] = []
  let requests = 0
  // routes that may repoint the default LLM provider, then destructive ones, last: the fixtures
  // stay usable while the others run
  const late = (r: RouteDef) => (r.method === 'DELETE' ? 2 : r.id.startsWith('llm-providers.') ? 1 : 0)
  const routes = [...allRoutes()].sort((a, b) => late(a) - late(b))
  for (const route of routes) {
    const variants = variantsOf(route)
    // everything as the admin (who reaches furthest); the text and depth variants also as an
    // ordinary Users member, whose requests take the other branches (403/404, own objects)
    const runs: [string, string, Variant[]][] = [['admin', env.adminToken, variants]]
    if (route.auth) runs.push(['user', user.token, variants.filter((v) => /NUL|surrogate|%00|deep/.test(v.label))])
    for (const [who, token, list] of runs) {
      // a route's variants four at a time (routes stay in order: destructive ones run last)
      const one = async (v: Variant) => {
        requests++
        let rawBody = v.rawBody
        if (rawBody === undefined && v.body !== undefined)
          rawBody = JSON.stringify(v.body).replace(JSON.stringify(DEEP_MARK), DEEP_JSON)
        const res =
          route.stream === undefined
            ? await env.request(route.method, v.path, {
                token,
                ...(rawBody === undefined ? {} : { rawBody, headers: { 'content-type': 'application/json' } }),
              })
            : await headOfStream(env.base, route.method, v.path, token, rawBody)
        if (res.status >= 500)
          failures.push(`${route.id} as ${who} ${v.label}: ${String(res.status)} ${res.text.slice(0, 160)}`)
      }
      for (let i = 0; i < list.length; i += 4) await Promise.all(list.slice(i, i + 4).map(one))
    }
  }
  t.comment(
    `${String(requests)} requests over ${String(routes.length)} routes, ${String(failures.length)} server errors`,
  )
  t.same(failures, [], 'answers >= 500')
})
