import t from 'tap'
import { allRoutes } from '../../src/main.ts'
import { KINDS } from '../../src/features.ts'
import { resourceRouteId } from '../../src/resources/routes.ts'
import type { AnyKind } from '../../src/resources/kind.ts'
import { enqueueJob } from '../../src/jobs/enqueue.ts'
import { KIND_FIXTURES } from '../fixtures/kinds.ts'
import { eventually } from '../helpers/eventually.ts'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * The access matrix: for every route in allRoutes(), user B (an ordinary Users member) tries it on
 * something user A owns, and the admin does the same. A route without a row fails the suite, so
 * every new route has to say who may use it. Rows for resource kinds are generated from KINDS.
 */
interface Ctx {
  env: TestPlatform
  a: { id: string; token: string }
  b: { id: string; token: string }
  n: () => string
}
interface Call {
  path: string
  body?: unknown
  /** For lists: an id/name of A's that must not appear in B's answer and must appear in the admin's. */
  hidden?: (item: Record<string, unknown>) => boolean
  /** Where the list is in the answer when it is not the body itself (MCP's tools/list result). */
  list?: (body: unknown) => Record<string, unknown>[]
}
interface Row {
  /** Builds the request (creating whatever A owns); called once for B and once for the admin. */
  call: (c: Ctx) => Promise<Call>
  b: number[]
  admin: number[]
  /** A list of the caller's own things: A's item is hidden from the admin as well. */
  ownOnly?: boolean
}

const ok = [200, 201, 204]
const publicRow = (path: string, body?: unknown): Row => ({
  call: async () => ({ path, ...(body === undefined ? {} : { body }) }),
  b: [200],
  admin: [200],
})

function kindRows(kind: AnyKind): Record<string, Row> {
  const fx = KIND_FIXTURES[kind.kind]
  if (fx === undefined) throw new Error(`no fixture for kind ${kind.kind} in tests/fixtures/kinds.ts`)
  const namespaced = kind.addressing === 'namespaced'
  const base = `/api/v1/${kind.plural}`
  // A's resource (admin-created for admin-only kinds: A cannot own one)
  const make = async (c: Ctx) => {
    const name = `m-${c.n()}`
    const body = namespaced ? { namespace: 'matrix', name, ...fx.valid } : { name, ...fx.valid }
    const res = await c.env.request('POST', base, { token: kind.adminOnly ? c.env.adminToken : c.a.token, body })
    if (res.status !== 201) throw new Error(`setup ${kind.kind}: ${String(res.status)} ${res.text}`)
    const rec = res.body as Record<string, unknown>
    return {
      name,
      one: namespaced ? `${base}/matrix/${name}` : `${base}/${name}`,
      change: namespaced ? `${base}/matrix/${name}` : `${base}/${String(rec['id'])}`,
    }
  }
  // an admin-only kind answers 403 to create; its rows stay invisible (404) like anyone else's
  const denied = [404]
  const rows: Record<string, Row> = {
    [resourceRouteId(kind, 'create')]: {
      // a namespace of the caller's own (claimed by this create): `matrix` belongs to A
      call: async (c) => ({
        path: base,
        body: namespaced
          ? { namespace: `matrix-${c.n()}`, name: `c-${c.n()}`, ...fx.valid }
          : { name: `c-${c.n()}`, ...fx.valid },
      }),
      b: kind.adminOnly ? [403] : [201],
      admin: [201],
    },
    [resourceRouteId(kind, 'list')]: {
      call: async (c) => {
        const r = await make(c)
        return { path: `${base}?limit=1000`, hidden: (i) => i['name'] === r.name }
      },
      // the list of an admin-only kind is an admin-only area
      b: kind.adminOnly ? [403] : [200],
      admin: [200],
    },
    [resourceRouteId(kind, 'get')]: { call: async (c) => ({ path: (await make(c)).one }), b: denied, admin: [200] },
    [resourceRouteId(kind, 'update')]: {
      call: async (c) => ({ path: (await make(c)).change, body: fx.update }),
      b: denied,
      admin: [200],
    },
    [resourceRouteId(kind, 'delete')]: {
      call: async (c) => ({ path: (await make(c)).change }),
      b: denied,
      admin: [204],
    },
  }
  if (kind.versioned.length > 0)
    rows[resourceRouteId(kind, 'versions')] = {
      call: async (c) => ({ path: `${(await make(c)).one}/versions` }),
      b: denied,
      admin: [200],
    }
  return rows
}

// A job of A's (no HTTP route starts one yet); rows wait until the worker has written its state.
async function jobOfA(c: Ctx): Promise<string> {
  const jobs = c.env.platform.jobs
  if (jobs === undefined) throw new Error('no job service')
  const job = await enqueueJob(jobs.enqueue, {
    pool: 'fn',
    kind: 'function',
    namespace: 'matrix',
    name: 'nothing',
    input: {},
    userId: c.a.id,
  })
  await eventually(
    async () =>
      (await c.env.request('GET', `/jobs/${job.id}`, { token: c.a.token })).status === 200 ? true : undefined,
    'the job state',
  )
  return job.id
}

const adminOnly = (path: string, admin = ok, body?: unknown): Row => ({
  call: async () => ({ path, ...(body === undefined ? {} : { body }) }),
  b: [403],
  admin,
})

/** One row per route id. Adding a route = adding one line here (see tests/README.md). */
const ROWS: Record<string, Row> = {
  ...(Object.assign({}, ...KINDS.map(kindRows)) as Record<string, Row>),
  // public and self-only routes: B gets its own answer, never A's
  'system.health': publicRow('/health'),
  'auth.info': publicRow('/auth/info'),
  'auth.me': { call: async () => ({ path: '/auth/me' }), b: [200], admin: [200] },
  'auth.check-permissions': {
    call: async () => ({ path: '/auth/check-permissions', body: { permissions: ['platform.system.read:all'] } }),
    b: [200],
    admin: [200],
  },
  'auth.login': {
    call: async (c) => ({ path: '/auth/login', body: { email: `nobody-${c.n()}@test.local` } }),
    b: [200],
    admin: [200],
  },
  'auth.verify-otp': {
    call: async () => ({
      path: '/auth/verify-otp',
      body: { session_id: '00000000-0000-4000-8000-000000000000', otp_code: '000000' },
    }),
    b: [401],
    admin: [401],
  },
  'auth.refresh': {
    call: async () => ({ path: '/auth/refresh', body: { refresh_token: 'not-a-token' } }),
    b: [401],
    admin: [401],
  },
  'auth.logout': {
    call: async () => ({ path: '/auth/logout', body: { refresh_token: 'not-a-token' } }),
    b: [204],
    admin: [204],
  },
  'auth.exchange': {
    call: async (c) => ({
      path: '/auth/token/exchange',
      body: { provider: 'p', subject: c.n(), email: `x-${c.n()}@test.local` },
    }),
    b: [403],
    admin: [200],
  },
  // jobs: A's job is invisible to B, the queue area is admin-only
  'jobs.get': { call: async (c) => ({ path: `/jobs/${await jobOfA(c)}` }), b: [404], admin: [200] },
  'jobs.result': { call: async (c) => ({ path: `/jobs/${await jobOfA(c)}/result` }), b: [404], admin: [200, 409] },
  'executions.get': {
    call: async (c) => {
      const id = await jobOfA(c)
      await eventually(
        async () => ((await c.env.request('GET', `/executions/${id}`)).status === 200 ? true : undefined),
        'the execution mirror',
      )
      return { path: `/executions/${id}` }
    },
    b: [404],
    admin: [200],
  },
  // everyone lists their own executions (B's list holds none of A's: tests/jobs/executions-list.test.ts)
  'executions.list': { call: async () => ({ path: '/executions?kind=function&limit=5' }), b: [200], admin: [200] },
  'queue.cancel': {
    call: async (c) => ({ path: `/api/v1/queue/jobs/${await jobOfA(c)}/cancel` }),
    b: [403],
    admin: [200, 409],
  },
  'system.flush-stuck-jobs': adminOnly('/api/v1/system/flush-stuck-jobs'),
  'queue.stats': adminOnly('/api/v1/queue/stats'),
  // ---- declarative config (src/gitops/): admin only; the admin's apply is a dry run of an empty document
  'config.validate': adminOnly('/api/v1/config/validate', [200], {
    config: 'apiVersion: platform/v1\nkind: PlatformConfig\nspec: {}\n',
  }),
  'config.apply': adminOnly('/api/v1/config/apply', [200], {
    config: 'apiVersion: platform/v1\nkind: PlatformConfig\nspec: {}\n',
    dryRun: true,
  }),
  'config.export': adminOnly('/api/v1/config/export', [200]),
  'queue.jobs': adminOnly('/api/v1/queue/jobs'),
  'queue.dlq.list': adminOnly('/api/v1/queue/dlq'),
  'queue.dlq.retry': {
    call: async (c) => ({ path: `/api/v1/queue/dlq/${await jobOfA(c)}/retry` }),
    b: [403],
    admin: [404, 409],
  },
  'queue.dlq.flush': adminOnly('/api/v1/queue/dlq/flush'),
  'queue.workers': adminOnly('/api/v1/queue/workers'),
  // functions: A's function is invisible to B (404), the admin runs it
  'functions.execute': {
    call: async (c) => ({ path: `/functions/matrix/${await functionOfA(c)}/execute`, body: { input: {} } }),
    b: [404],
    admin: [200],
  },
  'functions.execute-async': {
    call: async (c) => ({ path: `/functions/matrix/${await functionOfA(c)}/execute/async`, body: { input: {} } }),
    b: [404],
    admin: [202],
  },
  // chats: A's agent and chats are invisible to B; the admin reads and manages them but never
  // speaks in another user's chat
  'chats.create': {
    call: async (c) => ({ path: `/agents/matrix/${await agentOfA(c)}/chats`, body: {} }),
    b: [404],
    admin: [201],
  },
  'chats.list': {
    call: async (c) => {
      const id = await chatOfA(c)
      return { path: '/chats', hidden: (i) => i['id'] === id }
    },
    b: [200],
    // GET /chats lists the caller's own chats, the admin's too
    admin: [200],
    ownOnly: true,
  },
  'chats.get': { call: async (c) => ({ path: `/chats/${await chatOfA(c)}` }), b: [404], admin: [200] },
  'chats.update': {
    call: async (c) => ({ path: `/chats/${await chatOfA(c)}`, body: { archived: true } }),
    b: [404],
    admin: [200],
  },
  'chats.delete': { call: async (c) => ({ path: `/chats/${await chatOfA(c)}` }), b: [404], admin: [204] },
  'chats.send': {
    call: async (c) => ({ path: `/chats/${await chatOfA(c)}/messages`, body: { content: 'hi' } }),
    b: [404],
    admin: [404],
  },
  'chats.send-stream': {
    call: async (c) => ({ path: `/chats/${await chatOfA(c)}/messages/stream`, body: { content: 'hi' } }),
    b: [404],
    admin: [404],
  },
  // A's chat has no stream yet; another user's channel never resumes
  'chats.stream': {
    call: async (c) => ({ path: `/chats/${await chatOfA(c)}/stream/nochannel` }),
    b: [404],
    admin: [404],
  },
  // only the owner stops a chat's turn (the admin reads A's chat but never speaks in it, nor stops it)
  'chats.cancel': {
    call: async (c) => ({ path: `/chats/${await chatOfA(c)}/cancel` }),
    b: [404],
    admin: [404],
  },
  'chats.approve-tool': {
    call: async (c) => ({ path: `/chats/${await chatOfA(c)}/approve-tool/call1`, body: { approved: true } }),
    b: [404],
    admin: [404],
  },
  // no LLM provider is configured here: the admin's turn fails with 502 after it was allowed
  'agents.invoke': {
    call: async (c) => ({ path: `/agents/matrix/${await agentOfA(c)}/invoke`, body: { message: 'hi' } }),
    b: [404],
    admin: [200, 502],
  },
  // sandbox containers and shared workers: admin-only
  'containers.stats': adminOnly('/api/v1/containers/stats'),
  'containers.scale': adminOnly('/api/v1/containers/scale', ok, { target: 1 }),
  'containers.reload': adminOnly('/api/v1/containers/reload'),
  'system.containers.restart': adminOnly('/api/v1/system/containers/no-such-sandbox/restart', [404]),
  'workers.list': adminOnly('/api/v1/workers'),
  'workers.count': adminOnly('/api/v1/workers/count'),
  'workers.scale': adminOnly('/api/v1/workers/scale', ok, { target_count: 1 }),
  'workers.reload': adminOnly('/api/v1/workers/reload'),
  // users: B sees only itself
  'users.list': {
    call: async (c) => ({ path: '/api/v1/users', hidden: (i) => i['id'] === c.a.id }),
    b: [200],
    admin: [200],
  },
  'users.get': { call: async (c) => ({ path: `/api/v1/users/${c.a.id}` }), b: [404], admin: [200] },
  'users.create': {
    call: async (c) => ({ path: '/api/v1/users', body: { email: `new-${c.n()}@test.local` } }),
    b: [403],
    admin: [201],
  },
  'users.update': {
    call: async (c) => ({ path: `/api/v1/users/${c.a.id}`, body: { is_active: true } }),
    b: [404],
    admin: [200],
  },
  'users.delete': {
    call: async (c) => ({ path: `/api/v1/users/${(await c.env.createUser(`gone-${c.n()}@test.local`)).id}` }),
    b: [404],
    admin: [204],
  },
  // roles: admin-only, the reference is for everyone
  'roles.permissions.reference': {
    call: async () => ({ path: '/api/v1/roles/permissions/reference' }),
    b: [200],
    admin: [200],
  },
  'roles.list': adminOnly('/api/v1/roles'),
  'roles.get': adminOnly('/api/v1/roles/Users'),
  'roles.create': {
    call: async (c) => ({ path: '/api/v1/roles', body: { name: `R${c.n()}` } }),
    b: [403],
    admin: [201],
  },
  'roles.update': adminOnly('/api/v1/roles/GuestUsers', [200], { description: 'chat with the default agent' }),
  'roles.delete': {
    call: async (c) => {
      const name = `Gone${c.n()}`
      await c.env.request('POST', '/api/v1/roles', { body: { name } })
      return { path: `/api/v1/roles/${name}` }
    },
    b: [403],
    admin: [204],
  },
  'roles.users.add': {
    call: async (c) => ({ path: `/api/v1/roles/GuestUsers/users/${c.a.id}` }),
    b: [403],
    admin: [200],
  },
  'roles.users.remove': {
    call: async (c) => ({ path: `/api/v1/roles/GuestUsers/users/${c.a.id}` }),
    b: [403],
    admin: [200],
  },
  // API keys: A's key is invisible to B
  'api-keys.list': {
    call: async (c) => {
      const k = await keyOfA(c)
      return { path: '/api/v1/api-keys', hidden: (i) => i['id'] === k }
    },
    b: [200],
    admin: [200],
  },
  'api-keys.get': { call: async (c) => ({ path: `/api/v1/api-keys/${await keyOfA(c)}` }), b: [404], admin: [200] },
  'api-keys.create': {
    call: async () => ({
      path: '/api/v1/api-keys',
      body: { name: 'mine', permissions: { 'platform.skills/*/*.read:own': true } },
    }),
    b: [201],
    admin: [201],
  },
  'api-keys.delete': { call: async (c) => ({ path: `/api/v1/api-keys/${await keyOfA(c)}` }), b: [404], admin: [204] },
  // ---- dependencies (src/dependencies/): an admin area; Users may only request (a documented choice, docs/http-api.md#behaviour-notes) and follow their own request
  'dependencies.list': {
    call: async (c) => {
      await dependencyOfA(c)
      return { path: '/api/v1/dependencies' }
    },
    b: [403],
    admin: [200],
  },
  'dependencies.get': {
    call: async (c) => ({ path: `/api/v1/dependencies/${await dependencyOfA(c)}` }),
    b: [404],
    admin: [200],
  },
  'dependencies.create': {
    call: async (c) => ({ path: '/api/v1/dependencies', body: { package_name: `pkg-${c.n()}` } }),
    b: [201],
    admin: [201],
  },
  'dependencies.approve': {
    call: async (c) => ({ path: `/api/v1/dependencies/${await dependencyOfA(c)}/approve` }),
    b: [403],
    admin: [200],
  },
  'dependencies.reject': {
    call: async (c) => ({ path: `/api/v1/dependencies/${await dependencyOfA(c)}/reject` }),
    b: [403],
    admin: [200],
  },
  'dependencies.delete': {
    call: async (c) => ({ path: `/api/v1/dependencies/${await dependencyOfA(c)}` }),
    b: [403],
    admin: [204],
  },
  // ---- end dependencies
  // ---- packages (src/gitops/packages-*.ts): an administrator's area
  'packages.preview': {
    call: async () => ({ path: '/api/v1/packages/preview', body: { source: matrixPackage('preview') } }),
    b: [403],
    admin: [200],
  },
  'packages.install': {
    call: async (c) => ({ path: '/api/v1/packages/install', body: { source: matrixPackage(`mx${c.n()}`) } }),
    b: [403],
    admin: [200],
  },
  'packages.create': {
    call: async (c) => ({
      path: '/api/v1/packages/create',
      body: { name: 'made', version: '1', resources: [{ type: 'skill', namespace: await packageOfA(c), name: 'tip' }] },
    }),
    b: [403],
    admin: [200],
  },
  'packages.list': adminOnly('/api/v1/packages'),
  'packages.get': { call: async (c) => ({ path: `/api/v1/packages/${await packageOfA(c)}` }), b: [403], admin: [200] },
  'packages.uninstall': {
    call: async (c) => ({ path: `/api/v1/packages/${await packageOfA(c)}` }),
    b: [403],
    admin: [200],
  },
  'packages.export': {
    call: async (c) => ({ path: `/api/v1/packages/${await packageOfA(c)}/export` }),
    b: [403],
    admin: [200],
  },
  // ---- end packages
  // ---- namespaces (src/namespaces/): A's namespace is invisible to B; the admin manages every one
  'namespaces.list': { call: async () => ({ path: '/api/v1/namespaces' }), b: [200], admin: [200] },
  'namespaces.create': {
    call: async (c) => ({ path: '/api/v1/namespaces', body: { name: `ns-${c.n()}` } }),
    b: [201],
    admin: [201],
  },
  'namespaces.get': {
    call: async (c) => ({ path: `/api/v1/namespaces/${await namespaceOfA(c)}` }),
    b: [404],
    admin: [200],
  },
  'namespaces.delete': {
    call: async (c) => ({ path: `/api/v1/namespaces/${await namespaceOfA(c)}` }),
    b: [404],
    admin: [204],
  },
  'namespaces.members.add': {
    call: async (c) => ({ path: `/api/v1/namespaces/${await namespaceOfA(c)}/members/${c.b.id}` }),
    b: [404],
    admin: [200],
  },
  'namespaces.members.remove': {
    // A granted B and the admin; B (a member) may not take the admin's grant back, the admin may
    call: async (c) => {
      const ns = await namespaceOfA(c)
      for (const id of [c.b.id, c.env.adminId])
        await c.env.request('PUT', `/api/v1/namespaces/${ns}/members/${id}`, { token: c.a.token })
      return { path: `/api/v1/namespaces/${ns}/members/${c.env.adminId}` }
    },
    b: [403],
    admin: [200],
  },
  // ---- end namespaces
  // ---- connectors (src/connectors/): A's connector is invisible to B (404); the admin may call it
  // (its base URL is loopback, so the guarded client refuses the call after the permission check: 400)
  'connectors.import': {
    call: async (c) => ({
      path: '/api/v1/connectors/import',
      body: { namespace: `matrix-${c.n()}`, name: 'petstore', openapi: MINI_OPENAPI },
    }),
    b: [201],
    admin: [201],
  },
  'connectors.execute': {
    call: async (c) => ({
      path: `/api/v1/connectors/matrix/${await connectorOfA(c)}/operations/ping/execute`,
      body: { input: {} },
    }),
    b: [404],
    admin: [400],
  },
  'connectors.oauth-start': {
    call: async (c) => ({ path: `/api/v1/connectors/matrix/${await connectorOfA(c, true)}/oauth/start` }),
    b: [404],
    admin: [200],
  },
  'connectors.oauth-status': {
    call: async (c) => ({ path: `/api/v1/connectors/matrix/${await connectorOfA(c, true)}/oauth/token` }),
    b: [404],
    admin: [200],
  },
  // the admin has no connection of its own to remove (404 connector.oauth_not_found); B cannot see the connector
  'connectors.oauth-disconnect': {
    call: async (c) => ({ path: `/api/v1/connectors/matrix/${await connectorOfA(c, true)}/oauth/token` }),
    b: [404],
    admin: [404],
  },
  // no token: a callback without a known state is refused for everyone
  'connectors.oauth-callback': {
    call: async () => ({ path: '/api/v1/oauth/callback?state=unknown&code=x' }),
    b: [400],
    admin: [400],
  },
  // ---- end connectors
  // ---- MCP servers' OAuth (src/mcp-servers/): B cannot see A's server; nothing here reaches the network
  // the admin starts a flow on a server without OAuth: 422 mcp_server.not_oauth, before any discovery
  'mcp-servers.oauth-start': {
    call: async (c) => ({ path: `/api/v1/mcp-servers/matrix/${await mcpServerOfA(c, false)}/oauth/start` }),
    b: [404],
    admin: [422],
  },
  'mcp-servers.oauth-status': {
    call: async (c) => ({ path: `/api/v1/mcp-servers/matrix/${await mcpServerOfA(c, true)}/oauth/token` }),
    b: [404],
    admin: [200],
  },
  // the admin has no connection of its own to remove (404 mcp_server.oauth_not_found)
  'mcp-servers.oauth-disconnect': {
    call: async (c) => ({ path: `/api/v1/mcp-servers/matrix/${await mcpServerOfA(c, true)}/oauth/token` }),
    b: [404],
    admin: [404],
  },
  // a callback without a known state is refused for everyone
  'mcp-servers.oauth-callback': {
    call: async () => ({ path: '/api/v1/oauth/mcp-servers/callback?state=unknown&code=x' }),
    b: [400],
    admin: [400],
  },
  // ---- OpenAI adapter (src/adapter/): A's agent is no model for B; provider models need platform.llm (none here)
  'adapter.openai.models.list': { call: async () => ({ path: '/adapters/openai/v1/models' }), b: [200], admin: [200] },
  'adapter.openai.models.get': {
    call: async (c) => ({ path: `/adapters/openai/v1/models/agent:matrix%2F${await agentOfA(c)}` }),
    b: [404],
    admin: [200],
  },
  'adapter.openai.models.get-path': {
    call: async (c) => ({ path: `/adapters/openai/v1/models/agent:matrix/${await agentOfA(c)}` }),
    b: [404],
    admin: [200],
  },
  // no LLM provider is configured here: the admin's turn fails with 502 after it was allowed
  'adapter.openai.chat-completions': {
    call: async (c) => ({
      path: '/adapters/openai/v1/chat/completions',
      body: { model: `agent:matrix/${await agentOfA(c)}`, messages: [{ role: 'user', content: 'hi' }] },
    }),
    b: [404],
    admin: [200, 502],
  },
  // ---- end OpenAI adapter
  // MCP (src/mcp/): A's function is not among B's tools (an MCP answer is 200 either way); the admin's lists it
  'mcp.post': {
    call: async (c) => {
      const name = `fn.matrix.${await functionOfA(c)}`
      return { path: '/mcp', body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, ...mcpTools(name) }
    },
    b: [200],
    admin: [200],
  },
  'mcp.post-namespace': {
    call: async (c) => {
      const name = `fn.matrix.${await functionOfA(c)}`
      return { path: '/mcp/matrix', body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, ...mcpTools(name) }
    },
    b: [200],
    admin: [200],
  },
  'mcp.protected-resource': publicRow('/.well-known/oauth-protected-resource'),
  // Open to every caller, filtered per event (tests/command-line/run-chat-events.test.ts: B sees none of
  // the admin's runs); an invalid filter keeps the call finite (a valid one streams until closed)
  'events.stream': { call: async () => ({ path: '/api/v1/events/stream?filter=a..b' }), b: [422], admin: [422] },
  // ---- states (src/states/): A's store and its entries are invisible to B; the admin manages them
  'states.list': {
    call: async (c) => {
      const s = await stateOfA(c)
      return { path: `/stores/matrix/${s.store}/states`, hidden: (i) => i['key'] === s.key }
    },
    b: [404],
    admin: [200],
  },
  'states.create': {
    call: async (c) => ({
      path: `/stores/matrix/${(await stateOfA(c)).store}/states`,
      body: { key: `k-${c.n()}`, value: 1 },
    }),
    b: [404],
    admin: [201],
  },
  'states.get': { call: async (c) => ({ path: await statePathOfA(c) }), b: [404], admin: [200] },
  'states.put': { call: async (c) => ({ path: await statePathOfA(c), body: { value: 2 } }), b: [404], admin: [200] },
  'states.delete': { call: async (c) => ({ path: await statePathOfA(c) }), b: [404], admin: [204] },
  // the same entries on the runtime path group /states/{ns}/{name}[/{key}]
  'states.group.list': {
    call: async (c) => {
      const s = await stateOfA(c)
      return { path: `/states/matrix/${s.store}`, hidden: (i) => i['key'] === s.key }
    },
    b: [404],
    admin: [200],
  },
  'states.group.create': {
    call: async (c) => ({ path: `/states/matrix/${(await stateOfA(c)).store}`, body: { key: `k-${c.n()}`, value: 1 } }),
    b: [404],
    admin: [201],
  },
  'states.group.get': { call: async (c) => ({ path: await stateGroupPathOfA(c) }), b: [404], admin: [200] },
  'states.group.put': {
    call: async (c) => ({ path: await stateGroupPathOfA(c), body: { value: 2 } }),
    b: [404],
    admin: [200],
  },
  'states.group.delete': { call: async (c) => ({ path: await stateGroupPathOfA(c) }), b: [404], admin: [204] },
  // ---- end states
  // ---- templates, discovery, manifests (src/template-api/, src/discovery/, src/manifests/): A's are invisible to B
  'templates.get-by-id': {
    call: async (c) => ({ path: `/api/v1/templates/${(await templateOfA(c)).id}` }),
    b: [404],
    admin: [200],
  },
  'templates.patch-by-id': {
    call: async (c) => ({ path: `/api/v1/templates/${(await templateOfA(c)).id}`, body: { description: 'changed' } }),
    b: [404],
    admin: [200],
  },
  'templates.delete-by-id': {
    call: async (c) => ({ path: `/api/v1/templates/${(await templateOfA(c)).id}` }),
    b: [404],
    admin: [204],
  },
  'templates.get-by-name': {
    call: async (c) => ({ path: `/api/v1/templates/by-name/matrix/${(await templateOfA(c)).name}` }),
    b: [404],
    admin: [200],
  },
  'templates.render': {
    call: async (c) => ({ path: `/templates/${(await templateOfA(c)).id}/render`, body: { variables: { name: 'x' } } }),
    b: [404],
    admin: [200],
  },
  'templates.render-v1': {
    call: async (c) => ({
      path: `/api/v1/templates/${(await templateOfA(c)).id}/render`,
      body: { variables: { name: 'x' } },
    }),
    b: [404],
    admin: [200],
  },
  // no SMTP server in this platform: the admin passes every check and gets 503 email.not_configured
  'templates.send': {
    call: async (c) => ({
      path: `/templates/${(await templateOfA(c)).id}/send`,
      body: { to: 'x@test.local', variables: { name: 'x' } },
    }),
    b: [404],
    admin: [503],
  },
  'templates.send-v1': {
    call: async (c) => ({
      path: `/api/v1/templates/${(await templateOfA(c)).id}/send`,
      body: { to: 'x@test.local', variables: { name: 'x' } },
    }),
    b: [404],
    admin: [503],
  },
  'discovery.list': {
    call: async (c) => {
      const { name } = await templateOfA(c)
      return { path: '/discovery/templates', hidden: (i) => i['name'] === name }
    },
    b: [200],
    admin: [200],
  },
  'discovery.list-v1': {
    call: async (c) => {
      const { name } = await templateOfA(c)
      return { path: '/api/v1/discovery/templates', hidden: (i) => i['name'] === name }
    },
    b: [200],
    admin: [200],
  },
  'manifests.status': {
    call: async (c) => ({ path: `/api/runtime/manifests/matrix/${await manifestOfA(c)}/status` }),
    b: [404],
    admin: [200],
  },
  'manifests.status-runtime': {
    call: async (c) => ({ path: `/manifests/matrix/${await manifestOfA(c)}/status` }),
    b: [404],
    admin: [200],
  },
  // ---- end templates, discovery, manifests
  // ---- components (src/components/): A's component is invisible to B (404); pages and proxies the same
  'components.compile': {
    call: async (c) => ({ path: `/api/v1/components/matrix/${await componentOfA(c)}/compile` }),
    b: [404],
    admin: [200],
  },
  'components.shares.create': {
    call: async (c) => ({ path: `/api/v1/components/matrix/${await componentOfA(c)}/shares`, body: { max_views: 5 } }),
    b: [404],
    admin: [201],
  },
  'components.shares.list': {
    call: async (c) => ({ path: `/api/v1/components/matrix/${await componentOfA(c)}/shares` }),
    b: [404],
    admin: [200],
  },
  'components.shares.delete': {
    call: async (c) => {
      const { name, token } = await shareOfA(c)
      return { path: `/api/v1/components/matrix/${name}/shares/${token}` }
    },
    b: [404],
    admin: [204],
  },
  'components.renderable': {
    call: async (c) => {
      const name = await componentOfA(c, { visibility: 'private' })
      return { path: '/components?limit=1000', hidden: (i) => i['name'] === name }
    },
    b: [200],
    admin: [200],
  },
  'components.render': {
    call: async (c) => ({ path: `/components/matrix/${await componentOfA(c)}/render` }),
    b: [404],
    admin: [200],
  },
  // a share link opens the page for anyone holding it, without an account
  'components.shared': {
    call: async (c) => ({ path: `/components/shared/${(await shareOfA(c)).token}` }),
    b: [200],
    admin: [200],
  },
  'components.proxy.functions': {
    call: async (c) => {
      const fn = await functionOfA(c)
      return {
        path: `/components/matrix/${await componentOfA(c, { enabled_functions: [`matrix/${fn}`] })}/proxy/functions/matrix/${fn}/execute`,
        body: { input: {} },
      }
    },
    b: [404],
    admin: [200],
  },
  // no LLM provider is configured here: the admin's turn fails with 502 after it was allowed
  'components.proxy.agents': {
    call: async (c) => {
      const agent = await agentOfA(c)
      return {
        path: `/components/matrix/${await componentOfA(c, { enabled_agents: [`matrix/${agent}`] })}/proxy/agents/matrix/${agent}/invoke`,
        body: { message: 'hi' },
      }
    },
    b: [404],
    admin: [200, 502],
  },
  // the admin passes the component and list checks; the executor then finds no such query / store
  'components.proxy.queries': {
    call: async (c) => ({
      path: `/components/matrix/${await componentOfA(c, { enabled_queries: ['matrix/q'] })}/proxy/queries/matrix/q/execute`,
      body: {},
    }),
    b: [404],
    admin: [404],
  },
  'components.proxy.states': {
    call: async (c) => ({
      path: `/components/matrix/${await componentOfA(c, { enabled_stores: [{ store: 'matrix/s', access: 'readonly' }] })}/proxy/states/matrix`,
      body: { store: 's', action: 'list' },
    }),
    b: [404],
    admin: [404],
  },
  // page proxies take the page's view ticket, not a token: an unknown ticket is 401 for everyone
  // (tests/components/components.test.ts covers real tickets)
  'components.view.functions': {
    call: async () => ({ path: '/components/view/functions/matrix/f/execute', body: { input: {}, ticket: NO_TICKET } }),
    b: [401],
    admin: [401],
  },
  'components.view.agents': {
    call: async () => ({ path: '/components/view/agents/matrix/a/invoke', body: { message: 'hi', ticket: NO_TICKET } }),
    b: [401],
    admin: [401],
  },
  'components.view.queries': {
    call: async () => ({ path: '/components/view/queries/matrix/q/execute', body: { ticket: NO_TICKET } }),
    b: [401],
    admin: [401],
  },
  // an embedded component's page: only the embedding page's ticket opens it (tests/components/embed.test.ts has the rules)
  'components.view.embed': {
    call: async () => ({ path: `/components/view/embed/matrix/c?ticket=${NO_TICKET}` }),
    b: [401],
    admin: [401],
  },
  'components.view.states': {
    call: async () => ({
      path: '/components/view/states/matrix',
      body: { store: 's', action: 'list', ticket: NO_TICKET },
    }),
    b: [401],
    admin: [401],
  },
  // ---- end components
  // database connections (admin) and queries: A's query is invisible to B
  'database-connections.test': adminOnly('/api/v1/database-connections/test', [200], {
    connection_type: 'postgresql',
    host: '127.0.0.1',
    port: 1,
  }),
  'database-connections.test-saved': {
    call: async (c) => ({ path: `/api/v1/database-connections/${await connectionOfAdmin(c)}/test` }),
    b: [403],
    admin: [200],
  },
  'queries.execute': {
    call: async (c) => ({ path: `/queries/matrix/${await queryOfA(c)}/execute`, body: { input: {} } }),
    b: [404],
    admin: [200],
  },
  'queries.execute-management': {
    call: async (c) => ({ path: `/api/v1/queries/matrix/${await queryOfA(c)}/execute`, body: { input: {} } }),
    b: [404],
    admin: [200],
  },
  // ---- files (src/files/): A's collection and files are invisible to B; the admin also sees private files
  'files.upload': {
    call: async (c) => ({
      path: `/files/matrix/${await collectionOfA(c)}`,
      body: { name: 'up.txt', content_base64: 'aGk=' },
    }),
    b: [404],
    admin: [201],
  },
  'files.list': {
    call: async (c) => {
      const f = await fileOfA(c)
      return { path: `/files/matrix/${f.collection}`, hidden: (i) => i['name'] === f.name }
    },
    b: [404],
    admin: [200],
  },
  'files.download': { call: async (c) => ({ path: (await fileOfA(c)).path }), b: [404], admin: [200] },
  'files.info': { call: async (c) => ({ path: `${(await fileOfA(c)).path}/info` }), b: [404], admin: [200] },
  'files.update': {
    call: async (c) => ({ path: (await fileOfA(c)).path, body: { file_metadata: { k: 'v' } } }),
    b: [404],
    admin: [200],
  },
  'files.delete': { call: async (c) => ({ path: (await fileOfA(c)).path }), b: [404], admin: [204] },
  'files.url': { call: async (c) => ({ path: `${(await fileOfA(c)).path}/url`, body: {} }), b: [404], admin: [200] },
  'files.search': {
    call: async (c) => ({ path: `/files/matrix/${(await fileOfA(c)).collection}/search`, body: { query: 'hi' } }),
    b: [404],
    admin: [200],
  },
  // the URL is the permission (no Authorization): whoever holds A's link reads that one version
  'files.signed': {
    call: async (c) => {
      const res = await c.env.request('POST', `${(await fileOfA(c)).path}/url`, { token: c.a.token, body: {} })
      return { path: (res.body as { url: string }).url }
    },
    b: [200],
    admin: [200],
  },
  // ---- end files
  // ---- webhooks and schedules (src/webhooks/, src/schedules/): A's are invisible to B; a webhook needing auth refuses anonymous calls
  'webhooks.list': {
    call: async (c) => {
      const path = await webhookOfA(c)
      return { path: '/api/v1/webhooks?all=true', hidden: (i) => i['path'] === path }
    },
    b: [200],
    admin: [200],
  },
  'webhooks.create': {
    call: async (c) => ({
      path: '/api/v1/webhooks',
      body: { path: `mc/${c.n()}`, function_namespace: 'matrix', function_name: await functionOfA(c) },
    }),
    b: [404],
    admin: [201],
  },
  'webhooks.get': { call: async (c) => ({ path: `/api/v1/webhooks/${await webhookOfA(c)}` }), b: [404], admin: [200] },
  'webhooks.update': {
    call: async (c) => ({ path: `/api/v1/webhooks/${await webhookOfA(c)}`, body: { description: 'changed' } }),
    b: [404],
    admin: [200],
  },
  'webhooks.delete': {
    call: async (c) => ({ path: `/api/v1/webhooks/${await webhookOfA(c)}` }),
    b: [404],
    admin: [204],
  },
  ...Object.fromEntries(
    (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).map((m) => [
      `webhooks.trigger.${m.toLowerCase()}`,
      {
        call: async (c: Ctx) => ({
          path: `/webhooks/${await webhookOfA(c, m)}`,
          ...(m === 'GET' || m === 'DELETE' ? {} : { body: {} }),
        }),
        b: [401],
        admin: [401],
      } satisfies Row,
    ]),
  ),
  'schedules.list': {
    call: async (c) => {
      const name = await scheduleOfA(c)
      return { path: '/api/v1/schedules?all=true', hidden: (i) => i['name'] === name && i['owner_id'] === c.a.id }
    },
    b: [200],
    admin: [200],
  },
  'schedules.create': {
    call: async (c) => ({
      path: '/api/v1/schedules',
      body: {
        name: `sc-${c.n()}`,
        schedule_type: 'function',
        target_namespace: 'matrix',
        target_name: await functionOfA(c),
        cron_expression: '0 0 1 1 *',
      },
    }),
    b: [404],
    admin: [201],
  },
  'schedules.get': {
    call: async (c) => ({ path: `/api/v1/schedules/${await scheduleOfA(c)}?owner_id=${c.a.id}` }),
    b: [404],
    admin: [200],
  },
  'schedules.update': {
    call: async (c) => ({
      path: `/api/v1/schedules/${await scheduleOfA(c)}?owner_id=${c.a.id}`,
      body: { description: 'changed' },
    }),
    b: [404],
    admin: [200],
  },
  'schedules.delete': {
    call: async (c) => ({ path: `/api/v1/schedules/${await scheduleOfA(c)}?owner_id=${c.a.id}` }),
    b: [404],
    admin: [204],
  },
  // request and execution logs (src/analytics/): admin only; empty pages without ANALYTICS_HOST
  'request-logs.list': adminOnly('/api/v1/request-logs', [200]),
  'execution-logs.list': adminOnly('/api/v1/execution-logs', [200]),
  'system.actors': adminOnly('/api/v1/system/actors', [200]),
  'system.health.report': adminOnly('/api/v1/system/health', [200]),
  'system.actors.hosts': adminOnly('/api/v1/system/actors/hosts', [200]),
  'system.actors.drain': adminOnly('/api/v1/system/actors/hosts/no-such-host/drain', [404]),
  'system.actors.undrain': adminOnly('/api/v1/system/actors/hosts/no-such-host/undrain', [404]),
  // usage: every user reads their own; another user's only with platform.usage.read:all
  'usage.report': { call: async (c) => ({ path: `/api/v1/usage?user_id=${c.a.id}` }), b: [403], admin: [200] },
  // ---- end webhooks and schedules
  // ---- database triggers (src/db-triggers/): A's are invisible to B; B may not call A's function
  'db-triggers.list': {
    call: async (c) => {
      const name = await dbTriggerOfA(c)
      return {
        path: '/api/v1/database-triggers?all=true',
        hidden: (i) => i['name'] === name && i['owner_id'] === c.a.id,
      }
    },
    b: [200],
    admin: [200],
  },
  'db-triggers.create': {
    call: async (c) => ({
      path: '/api/v1/database-triggers',
      body: {
        name: `dt-${c.n()}`,
        database_connection_id: await grantedConnection(c),
        table_name: 'roles',
        poll_column: 'created_at',
        function_namespace: 'matrix',
        function_name: await functionOfA(c),
        is_active: false,
      },
    }),
    b: [404],
    admin: [201],
  },
  'db-triggers.get': {
    call: async (c) => ({ path: `/api/v1/database-triggers/${await dbTriggerOfA(c)}?owner_id=${c.a.id}` }),
    b: [404],
    admin: [200],
  },
  'db-triggers.update': {
    call: async (c) => ({
      path: `/api/v1/database-triggers/${await dbTriggerOfA(c)}?owner_id=${c.a.id}`,
      body: { description: 'changed' },
    }),
    b: [404],
    admin: [200],
  },
  'db-triggers.delete': {
    call: async (c) => ({ path: `/api/v1/database-triggers/${await dbTriggerOfA(c)}?owner_id=${c.a.id}` }),
    b: [404],
    admin: [204],
  },
}

/** A connection A was granted the use of (to the platform's own database; the triggers stay inactive). */
async function grantedConnection(c: Ctx): Promise<string> {
  const id = await connectionOfAdmin(c)
  const conn = (await c.env.request('GET', `/api/v1/database-connections`)).body as { id: string; name: string }[]
  const name = conn.find((x) => x.id === id)?.name as string
  // through the API: A's principal is cached by now, and the role change must invalidate it
  const role = `use-${c.n()}`
  const made = await c.env.request('POST', '/api/v1/roles', {
    body: { name: role, permissions: { [`platform.database-connections/${name}.use:all`]: true } },
  })
  const given = await c.env.request('POST', `/api/v1/roles/${role}/users/${c.a.id}`)
  if (made.status !== 201 || given.status !== 200) throw new Error(`setup grant: ${made.text} ${given.text}`)
  return id
}

async function dbTriggerOfA(c: Ctx): Promise<string> {
  const name = `dt-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/database-triggers', {
    token: c.a.token,
    body: {
      name,
      database_connection_id: await grantedConnection(c),
      table_name: 'roles',
      poll_column: 'created_at',
      function_namespace: 'matrix',
      function_name: await functionOfA(c),
      is_active: false,
    },
  })
  if (res.status !== 201) throw new Error(`setup database trigger: ${res.text}`)
  return name
}

async function webhookOfA(c: Ctx, method = 'POST'): Promise<string> {
  const path = `matrix/${c.n()}`
  const res = await c.env.request('POST', '/api/v1/webhooks', {
    token: c.a.token,
    body: { path, http_method: method, function_namespace: 'matrix', function_name: await functionOfA(c) },
  })
  if (res.status !== 201) throw new Error(`setup webhook: ${res.text}`)
  // the gateways learn the path through the WEBHOOKS bucket watch
  await eventually(
    async () => ((await c.env.request(method, `/webhooks/${path}`, { token: null })).status === 401 ? true : undefined),
    'the webhook at the gateway',
  )
  return path
}

async function scheduleOfA(c: Ctx): Promise<string> {
  const name = `s-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/schedules', {
    token: c.a.token,
    body: {
      name,
      schedule_type: 'function',
      target_namespace: 'matrix',
      target_name: await functionOfA(c),
      cron_expression: '0 0 1 1 *',
    },
  })
  if (res.status !== 201) throw new Error(`setup schedule: ${res.text}`)
  return name
}

async function collectionOfA(c: Ctx): Promise<string> {
  const name = `col-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/collections', {
    token: c.a.token,
    body: { namespace: 'matrix', name },
  })
  if (res.status !== 201) throw new Error(`setup collection: ${res.text}`)
  return name
}

async function fileOfA(c: Ctx): Promise<{ collection: string; name: string; path: string }> {
  const collection = await collectionOfA(c)
  const res = await c.env.request('POST', `/files/matrix/${collection}`, {
    token: c.a.token,
    body: { name: 'a.txt', content_base64: 'aGk=' },
  })
  if (res.status !== 201) throw new Error(`setup file: ${res.text}`)
  return { collection, name: 'a.txt', path: `/files/matrix/${collection}/a.txt` }
}

/** A connection to the test platform's own database (admin-created: connections are admin-only). */
async function connectionOfAdmin(c: Ctx): Promise<string> {
  const u = new URL(c.env.databaseUrl)
  const res = await c.env.request('POST', '/api/v1/database-connections', {
    body: {
      name: `conn-${c.n()}`,
      connection_type: 'postgresql',
      host: u.hostname,
      port: Number(u.port),
      database: u.pathname.slice(1),
      username: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password),
      allow_platform_database: true,
    },
  })
  if (res.status !== 201) throw new Error(`setup connection: ${res.text}`)
  return (res.body as { id: string }).id
}

/** A query of A's on a connection A was granted the use of. */
async function queryOfA(c: Ctx): Promise<string> {
  const id = await connectionOfAdmin(c)
  const conn = (await c.env.request('GET', `/api/v1/database-connections`)).body as { id: string; name: string }[]
  const name = conn.find((x) => x.id === id)?.name as string
  const role = `use-${c.n()}`
  await c.env.sql(`insert into roles (name, permissions) values ($1, jsonb_build_object($2::text, true))`, [
    role,
    `platform.database-connections/${name}.use:all`,
  ])
  await c.env.sql('insert into user_roles (user_id, role_id) select $1, id from roles where name = $2', [c.a.id, role])
  const q = `q-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/queries', {
    token: c.a.token,
    body: { namespace: 'matrix', name: q, database_connection_id: id, sql: 'select 1 as one' },
  })
  if (res.status !== 201) throw new Error(`setup query: ${res.text}`)
  return q
}

const NO_TICKET = `cvt_${'x'.repeat(43)}`

async function componentOfA(c: Ctx, extra: Record<string, unknown> = {}): Promise<string> {
  const name = `cmp-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/components', {
    token: c.a.token,
    body: { namespace: 'matrix', name, ...KIND_FIXTURES['component']?.valid, ...extra },
  })
  if (res.status !== 201) throw new Error(`setup component: ${res.text}`)
  return name
}

async function shareOfA(c: Ctx): Promise<{ name: string; token: string }> {
  const name = await componentOfA(c)
  const res = await c.env.request('POST', `/api/v1/components/matrix/${name}/shares`, { token: c.a.token, body: {} })
  if (res.status !== 201) throw new Error(`setup share: ${res.text}`)
  return { name, token: (res.body as { token: string }).token }
}

async function templateOfA(c: Ctx): Promise<{ id: string; name: string }> {
  const name = `t-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/templates', {
    token: c.a.token,
    body: { namespace: 'matrix', name, ...KIND_FIXTURES['template']?.valid },
  })
  if (res.status !== 201) throw new Error(`setup template: ${res.text}`)
  return { id: (res.body as { id: string }).id, name }
}

async function manifestOfA(c: Ctx): Promise<string> {
  const name = `mf-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/manifests', {
    token: c.a.token,
    body: { namespace: 'matrix', name, ...KIND_FIXTURES['manifest']?.valid },
  })
  if (res.status !== 201) throw new Error(`setup manifest: ${res.text}`)
  return name
}

async function stateOfA(c: Ctx): Promise<{ store: string; key: string }> {
  const store = `s-${c.n()}`
  const made = await c.env.request('POST', '/api/v1/stores', {
    token: c.a.token,
    body: { namespace: 'matrix', name: store },
  })
  if (made.status !== 201) throw new Error(`setup store: ${made.text}`)
  const key = `k-${c.n()}`
  // private: only A and whoever manages the store (the admin) see it
  const res = await c.env.request('POST', `/stores/matrix/${store}/states`, {
    token: c.a.token,
    body: { key, value: { n: 1 }, visibility: 'private' },
  })
  if (res.status !== 201) throw new Error(`setup state: ${res.text}`)
  return { store, key }
}

async function statePathOfA(c: Ctx): Promise<string> {
  const s = await stateOfA(c)
  return `/stores/matrix/${s.store}/states/${s.key}`
}

async function stateGroupPathOfA(c: Ctx): Promise<string> {
  const s = await stateOfA(c)
  return `/states/matrix/${s.store}/${s.key}`
}

const MINI_OPENAPI = {
  openapi: '3.0.3',
  info: { title: 'mini', version: '1' },
  servers: [{ url: 'https://api.example.com' }],
  paths: { '/ping': { get: { operationId: 'ping', responses: { '200': { description: 'ok' } } } } },
}

async function connectorOfA(c: Ctx, oauth = false): Promise<string> {
  const name = `conn-${c.n()}`
  const auth = oauth
    ? {
        type: 'oauth2',
        oauth2: {
          authorization_url: 'https://auth.example.com/authorize',
          token_url: 'https://auth.example.com/token',
          client_id: 'cid',
          scopes: ['read'],
        },
      }
    : { type: 'none' }
  const body = {
    namespace: 'matrix',
    name,
    base_url: 'https://127.0.0.1',
    auth,
    operations: [{ name: 'ping', method: 'GET', path: '/ping' }],
  }
  const res = await c.env.request('POST', '/api/v1/connectors', { token: c.a.token, body })
  if (res.status !== 201) throw new Error(`setup connector: ${res.text}`)
  return name
}

async function mcpServerOfA(c: Ctx, oauth: boolean): Promise<string> {
  const name = `mcp-${c.n()}`
  const body = {
    namespace: 'matrix',
    name,
    url: 'https://mcp.example.com/mcp',
    auth: oauth ? { type: 'oauth', client_id: 'cid' } : { type: 'none' },
  }
  const res = await c.env.request('POST', '/api/v1/mcp-servers', { token: c.a.token, body })
  if (res.status !== 201) throw new Error(`setup MCP server: ${res.text}`)
  return name
}

async function namespaceOfA(c: Ctx): Promise<string> {
  const name = `ns-a-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/namespaces', { token: c.a.token, body: { name } })
  if (res.status !== 201) throw new Error(`setup namespace: ${res.text}`)
  return name
}

/** A package with one skill, in a namespace of its name. */
const matrixPackage = (name: string) =>
  `apiVersion: platform/v1\nkind: PlatformPackage\npackage: {name: ${name}, version: '1'}\nspec:\n  skills:\n    - {namespace: ${name}, name: tip, content: hi}\n`

/** An installed package (installed by the admin: packages are an administrator's); its name, also its skill's namespace. */
async function packageOfA(c: Ctx): Promise<string> {
  const name = `mx${c.n()}`
  const res = await c.env.request('POST', '/api/v1/packages/install', { body: { source: matrixPackage(name) } })
  if (res.status !== 200) throw new Error(`setup package: ${String(res.status)} ${res.text}`)
  return name
}

async function dependencyOfA(c: Ctx): Promise<string> {
  const res = await c.env.request('POST', '/api/v1/dependencies', {
    token: c.a.token,
    body: { package_name: `dep-${c.n()}` },
  })
  if (res.status !== 201) throw new Error(`setup dependency: ${String(res.status)} ${res.text}`)
  return (res.body as { id: string }).id
}

async function agentOfA(c: Ctx): Promise<string> {
  const name = `a-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/agents', {
    token: c.a.token,
    body: {
      namespace: 'matrix',
      name,
      ...KIND_FIXTURES['agent']?.valid,
      enabled_functions: [],
      enabled_agents: [],
      enabled_skills: [],
      hooks: { on_user_message: [], on_assistant_message: [] },
      input_schema: {},
    },
  })
  if (res.status !== 201) throw new Error(`setup agent: ${res.text}`)
  return name
}

async function chatOfA(c: Ctx): Promise<string> {
  const res = await c.env.request('POST', `/agents/matrix/${await agentOfA(c)}/chats`, { token: c.a.token, body: {} })
  if (res.status !== 201) throw new Error(`setup chat: ${res.text}`)
  return (res.body as { id: string }).id
}

/** An MCP tools/list answer's tools, and the one named `name` as the item A owns. */
const mcpTools = (name: string): Pick<Call, 'hidden' | 'list'> => ({
  hidden: (tool) => tool['name'] === name,
  list: (body) => (body as { result: { tools: Record<string, unknown>[] } }).result.tools,
})

async function functionOfA(c: Ctx): Promise<string> {
  const name = `f-${c.n()}`
  const res = await c.env.request('POST', '/api/v1/functions', {
    token: c.a.token,
    body: { namespace: 'matrix', name, ...KIND_FIXTURES['function']?.valid },
  })
  if (res.status !== 201) throw new Error(`setup function: ${res.text}`)
  return name
}

async function keyOfA(c: Ctx): Promise<string> {
  const res = await c.env.request('POST', '/api/v1/api-keys', {
    token: c.a.token,
    body: { name: `k${c.n()}`, permissions: {} },
  })
  return (res.body as { id: string }).id
}

const routes = allRoutes().filter((r) => r.target === 'rpc' || r.id === 'system.health')

t.test('every route has a matrix row', async (t) => {
  const missing = routes.map((r) => r.id).filter((id) => !(id in ROWS))
  t.same(missing, [], 'routes without a row in tests/access/matrix.test.ts')
})

// Every route, as B and as the admin, each with its own setup: the file grows with the platform
// (about 500 calls); the suite's 180 s per file is too short for it on a loaded machine.
t.setTimeout(600_000)

t.test('user B cannot reach what A owns; the admin can', async (t) => {
  const env = await startTestPlatform(t)
  const a = await env.createUser('matrix-a@test.local')
  const b = await env.createUser('matrix-b@test.local')
  let i = 0
  const ctx: Ctx = { env, a, b, n: () => `${String(process.pid)}x${String(++i)}` }
  for (const route of routes) {
    const row = ROWS[route.id]
    if (row === undefined) continue
    for (const [who, token, expected] of [
      ['B', b.token, row.b],
      ['admin', env.adminToken, row.admin],
    ] as const) {
      const call = await row.call(ctx)
      const res = await env.request(route.method, call.path, {
        token: route.auth ? token : null,
        ...(call.body === undefined ? {} : { body: call.body }),
      })
      t.ok(
        expected.includes(res.status),
        `${route.id} as ${who}: ${String(res.status)} in [${expected.join(',')}]${expected.includes(res.status) ? '' : ` ${res.text}`}`,
      )
      if (call.hidden !== undefined && res.status === 200) {
        const seen = (call.list?.(res.body) ?? (res.body as Record<string, unknown>[])).some(call.hidden)
        const expectSeen = who === 'admin' && row.ownOnly !== true
        t.equal(seen, expectSeen, `${route.id}: A's item ${expectSeen ? 'listed' : 'not listed'} for ${who}`)
      }
    }
  }
})
