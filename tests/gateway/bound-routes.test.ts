import t from 'tap'
import { Type as T } from '@sinclair/typebox'
import { connect } from '@nats-io/transport-node'
import { bind } from '../../src/api/bind.ts'
import { defineRoute, rpcSubject } from '../../src/api/route.ts'
import type { Caller } from '../../src/auth/caller.ts'
import { serveRpc } from '../../src/api/rpc-server.ts'
import { decodeReply, encodeRequest } from '../../src/api/rpc-wire.ts'
import type { Principal } from '../../src/auth/principal.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { readServices } from '../setup/services.ts'

/*
 * A bound route over NATS, without the gateway: the RPC server resolves the caller once, answers
 * 401 without one, re-checks the input against the route's schemas, and hands the handler typed
 * `{ principal, params, query, body }`.
 */
const services = readServices()
const nc = await connect({ servers: services.natsUrl })
const names = natsNames(`t${String(process.pid)}_bound`)
t.teardown(() => nc.close())

const route = defineRoute({
  id: 'test.bound.echo',
  method: 'POST',
  path: '/echo/{id}',
  surface: 'runtime',
  summary: 'echo',
  tags: ['test'],
  auth: true,
  target: 'rpc',
  params: T.Object({ id: T.String({ pattern: '^[a-z]+$' }) }),
  query: T.Object({ limit: T.Optional(T.Integer({ minimum: 1 })) }),
  body: T.Object({ n: T.Integer() }, { additionalProperties: false }),
})
const openRoute = defineRoute({
  id: 'test.bound.open',
  method: 'GET',
  path: '/open',
  surface: 'runtime',
  summary: 'open',
  tags: ['test'],
  auth: false,
  target: 'rpc',
})

const resolved: Caller[] = []
const seen: unknown[] = []
const bound = [
  // typed input: no cast anywhere (principal is a Principal, body.n a number, query.limit a number | undefined)
  bind(route, async ({ principal, params, query, body }) => {
    seen.push({ user: principal.userId, id: params.id, limit: query.limit ?? null, n: body.n + 1 })
    return {
      status: 201,
      body: { user: principal.userId, id: params.id, next: body.n + 1 },
      headers: { 'x-test': 'yes' },
    }
  }),
  bind(openRoute, async ({ principal }) => ({ body: { principal } })),
]
const rpc = serveRpc({
  nc,
  names,
  routes: bound,
  log: createLogger({ level: 'silent' }),
  principal: async (caller): Promise<Principal> => {
    resolved.push(caller)
    return { userId: caller.sub, email: 'u@test.local', permissions: [] }
  },
})
t.teardown(() => rpc.close())

const call = async (
  id: string,
  req: { caller: Caller | null; params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown },
) => {
  const out = encodeRequest(
    { requestId: 'r1', caller: req.caller, params: req.params ?? {}, query: req.query ?? {} },
    req.body === undefined ? new Uint8Array(0) : new TextEncoder().encode(JSON.stringify(req.body)),
  )
  const msg = await nc.request(rpcSubject(names, id), out.data, { headers: out.headers, timeout: 5000 })
  const r = decodeReply(msg.headers, msg.data)
  return {
    status: r.status,
    headers: r.headers,
    body: r.data.length === 0 ? undefined : (JSON.parse(new TextDecoder().decode(r.data)) as Record<string, unknown>),
  }
}
const alice: Caller = { sub: '00000000-0000-4000-8000-0000000000a1', via: 'jwt' }

t.test('the caller is resolved once and the handler gets typed, validated input', async (t) => {
  const r = await call(route.id, { caller: alice, params: { id: 'abc' }, query: { limit: 3 }, body: { n: 41 } })
  t.equal(r.status, 201)
  t.same(r.body, { user: alice.sub, id: 'abc', next: 42 })
  t.equal(r.headers['x-test'], 'yes')
  t.same(resolved, [alice], 'the resolver ran exactly once for the request')
  t.same(seen, [{ user: alice.sub, id: 'abc', limit: 3, n: 42 }])
})

t.test('an auth route without a caller answers 401 before the handler runs', async (t) => {
  const before = seen.length
  const r = await call(route.id, { caller: null, params: { id: 'abc' }, body: { n: 1 } })
  t.equal(r.status, 401)
  t.equal(r.body?.['code'], 'auth.unauthorized')
  t.equal(seen.length, before)
})

t.test('input reaching the route over NATS without the gateway is checked against the same schemas', async (t) => {
  const before = seen.length
  const badBody = await call(route.id, { caller: alice, params: { id: 'abc' }, body: { n: 'x' } })
  t.equal(badBody.status, 422)
  t.equal(badBody.body?.['code'], 'request.invalid')
  const badParams = await call(route.id, { caller: alice, params: { id: 'ABC!' }, body: { n: 1 } })
  t.equal(badParams.status, 422)
  const badQuery = await call(route.id, { caller: alice, params: { id: 'abc' }, query: { limit: 0 }, body: { n: 1 } })
  t.equal(badQuery.status, 422)
  t.equal(seen.length, before, 'the handler never saw invalid input')
})

t.test('an open route gets principal null and resolves nobody', async (t) => {
  const before = resolved.length
  const r = await call(openRoute.id, { caller: alice })
  t.equal(r.status, 200)
  t.same(r.body, { principal: null })
  t.equal(resolved.length, before)
})

t.test('without a resolver (no database in the process) auth routes are not served', async (t) => {
  const other = natsNames(`t${String(process.pid)}_bound2`)
  const s = serveRpc({ nc, names: other, routes: bound, log: createLogger({ level: 'silent' }) })
  t.teardown(() => s.close())
  await t.rejects(
    nc.request(rpcSubject(other, route.id), new Uint8Array(0), { timeout: 2000 }),
    'no responder for the auth route',
  )
  const out = encodeRequest({ requestId: 'r2', caller: null, params: {}, query: {} }, new Uint8Array(0))
  const msg = await nc.request(rpcSubject(other, openRoute.id), out.data, { headers: out.headers, timeout: 5000 })
  t.equal(decodeReply(msg.headers, msg.data).status, 200, 'the open route is')
})

t.test('in one process the gateway answers a route in memory, the same as over NATS', async (t) => {
  const { RouteCaller } = await import('../../gateway/route-call.ts')
  const { trackNatsLink } = await import('../../gateway/nats-status.ts')
  const quiet = createLogger({ level: 'silent' })
  const nc2 = await connect({ servers: services.natsUrl })
  t.teardown(() => nc2.close())
  // a plain subscriber on the route's subject sees every request that travels over NATS
  let overNats = 0
  const spy = nc2.subscribe(rpcSubject(names, route.id), { callback: () => void overNats++ })
  t.teardown(() => spy.unsubscribe())
  await nc2.flush()
  const here = new RouteCaller({ nc, link: trackNatsLink(nc, quiet), rpcTimeoutMs: 5000 })
  const remote = new RouteCaller({ nc: nc2, link: trackNatsLink(nc2, quiet), rpcTimeoutMs: 5000 })
  const body = (data: Uint8Array) =>
    data.length === 0 ? undefined : (JSON.parse(new TextDecoder().decode(data)) as unknown)
  const cases = [
    { caller: alice, params: { id: 'abc' }, query: { limit: 2 }, body: { n: 1 } },
    { caller: null, params: { id: 'abc' }, query: {}, body: { n: 1 } },
    { caller: alice, params: { id: 'ABC!' }, query: {}, body: { n: 1 } },
    { caller: alice, params: { id: 'abc' }, query: {}, body: { n: 'x' } },
  ]
  for (const c of cases) {
    const meta = { requestId: 'r3', caller: c.caller, params: c.params, query: c.query, clientIp: '192.0.2.1' }
    const bytes = new TextEncoder().encode(JSON.stringify(c.body))
    const a = await here.call(rpcSubject(names, route.id), meta, bytes)
    const b = await remote.call(rpcSubject(names, route.id), meta, bytes)
    t.same(
      { status: a.status, headers: a.headers, body: body(a.data) },
      { status: b.status, headers: b.headers, body: body(b.data) },
      `same answer: ${JSON.stringify(c)}`,
    )
  }
  await nc2.flush()
  t.equal(overNats, cases.length, 'only the other connection’s requests crossed NATS')

  // a handler that never answers: 504 after the timeout, as over NATS
  const stuck = defineRoute({
    id: 'test.bound.stuck',
    method: 'GET',
    path: '/stuck',
    surface: 'runtime',
    summary: 'stuck',
    tags: ['test'],
    auth: false,
    target: 'rpc',
  })
  const s = serveRpc({ nc, names, routes: [bind(stuck, () => new Promise(() => undefined))], log: quiet })
  const fast = new RouteCaller({ nc, link: trackNatsLink(nc, quiet), rpcTimeoutMs: 200 })
  await t.rejects(
    fast.call(rpcSubject(names, stuck.id), { requestId: 'r4', caller: null, params: {}, query: {} }, new Uint8Array(0)),
    { status: 504, code: 'service.timeout' },
  )
  // once the route stops being served here, the call goes over NATS: nobody answers, 503
  await s.close()
  await t.rejects(
    fast.call(rpcSubject(names, stuck.id), { requestId: 'r5', caller: null, params: {}, query: {} }, new Uint8Array(0)),
    { status: 503, code: 'service.unavailable' },
  )
})
