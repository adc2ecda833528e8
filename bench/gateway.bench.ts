import { randomBytes, randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { issueAccessToken } from '../src/auth/tokens.ts'
import { createLogger } from '../src/kernel/log.ts'
import { startNats } from '../src/platform/local-services.ts'
import { allRoutes } from '../src/main.ts'
import { startClickHouse } from '../tests/helpers/clickhouse.ts'
import { removeTempDir, startServerChild, tempDir, type ServerChild } from './lib/children.ts'
import { committedTransactions } from './lib/pg-stats.ts'
import { childPids } from './lib/cpu.ts'
import { expectOk, measure, type LoadTarget } from './lib/load.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * The gateway against a bare uWebSockets.js hello-world, each in a process of its own:
 *   baseline      uws hello-world
 *   /health       answered by the gateway itself
 *   floor         the same read in a ~25-line uWS server: jose HS256 verify + pg Pool(10) select of the
 *                 same row from the platform's Postgres (servers/uws-jose-pg.ts)
 *   JSON, 1 proc  GET /api/v1/agents/default/default, gateway + resource service in one process (ROLES=all),
 *                 compared with the floor on CPU summed over every process (targets: ≥2× its req/s, ≤1× its CPU)
 *   traces        the same read in a second ROLES=all process on the same servers, tracing off and then
 *                 tracing on (every request sampled, spans exported every 100 ms to a local OTLP/HTTP
 *                 receiver, servers/otlp-sink.ts), the one against the other (src/platform/tracing.ts)
 *   JSON, split   the same route, ROLES=gateway in one process and ROLES=resources in another
 *   JSON, stub    the same route, ROLES=gateway, answered by a stub service replying the same bytes
 *   request log   the 1-process read on a second platform with ANALYTICS_HOST set (every request
 *                 recorded, batched over NATS and written to a ClickHouse started here), measured
 *                 next to the first platform again (logging off): target ≤ 5 % req/s lost
 * The platform process starts its own nats-server and Postgres in a temporary DATA_DIR; the later
 * processes use them with their own NATS_PREFIX so the first process's service does not answer them.
 */
const NAME = 'gateway'
const JSON_PATH = '/api/v1/agents/default/default'
/** The issue's target: gateway CPU per request at most twice the bare uWS server's. */
const LIMIT = 2
/** The issue's targets for the resource read against its floor: at least twice its req/s, at most its CPU per request (all processes). */
const FLOOR_RPS = 2
const FLOOR_CPU = 1
const FLOOR_CASE = 'floor: uws + jose HS256 + pg Pool(10), same row'
const UNTRACED_CASE = `GET ${JSON_PATH}, 1 process, tracing off`
/** The request log's target: at most 5 % of the read's req/s lost. */
const LOG_RPS = 0.95
const LOG_OFF_CASE = `GET ${JSON_PATH}, 1 process, request log off (measured again next to on)`
/**
 * BENCH_GATEWAY_ONLY=split: only the baseline and the ROLES=gateway rows (the split service and the
 * stub), for profiling the edge process without the 1-process, floor, trace and request-log cases.
 */
const onlySplit = process.env['BENCH_GATEWAY_ONLY'] === 'split'
/**
 * BENCH_GATEWAY_ONLY=edge: the edge process and its floor without the platform (no Postgres, no
 * NATS credentials: a nats-server of the bench's own): the hello-world, then a ROLES=gateway
 * process, a bare uWS forwarder by `nc.request` and one by the gateway's mux, all against the same
 * stub service, twice in alternation (a loaded host moves from minute to minute). Starts in seconds
 * where the full platform's start times out on a host at load 30+.
 */
const onlyEdge = process.env['BENCH_GATEWAY_ONLY'] === 'edge'
/** A reply of the size of the agent resource read's (~0.9 kB of JSON). */
const EDGE_BODY = JSON.stringify({
  namespace: 'default',
  name: 'default',
  description: 'the default agent: answers in the language of the question, uses the tools it is given',
  model: 'default/fake-model',
  system_prompt: 'x'.repeat(400),
  tools: [],
  skills: [],
  sub_agents: [],
  created_at: '2026-12-05T00:00:00.000Z',
  updated_at: '2026-12-05T00:00:00.000Z',
})

const toRow = (label: string, m: Awaited<ReturnType<typeof measure>>, extra: Partial<Row> = {}): Row => ({
  benchmark: NAME,
  case: label,
  ...m,
  ...extra,
})

async function run(): Promise<Row[]> {
  const rows: Row[] = []
  const started: ServerChild[] = []
  const start = async (name: string, script: string, env: Record<string, string>) => {
    process.stderr.write(`  starting ${name}...\n`)
    const child = await startServerChild(name, script, env)
    started.push(child)
    process.stderr.write(
      `  ${name} ready: pid ${String(child.pid)}${child.info.port > 0 ? `, port ${String(child.info.port)}` : ''}\n`,
    )
    return child
  }
  /** Measures one case; with `countXacts` (the platform database's URL) the note ends with the Postgres transactions per request. */
  const load = async (label: string, target: LoadTarget, extra: Partial<Row> = {}, countXacts?: string) => {
    process.stderr.write(`  measuring ${label}\n`)
    const body = await expectOk(target.url, target.headers)
    const before = countXacts === undefined ? 0 : await committedTransactions(countXacts)
    const m = await measure(target)
    // Warm-up and the platform's background work included: a warm read that never reaches Postgres shows ~0.
    const pgNote =
      countXacts === undefined
        ? undefined
        : `Postgres transactions per measured request, warm-up included ${(((await committedTransactions(countXacts)) - before) / Math.max(1, m.requests)).toFixed(3)}`
    const note = [extra.note, pgNote].filter((x) => x !== undefined).join('; ')
    rows.push(toRow(label, m, { ...extra, ...(note === '' ? {} : { note }) }))
    return body
  }
  const route = allRoutes().find((r) => r.method === 'GET' && r.path === '/api/v1/agents/{namespace}/{name}')
  if (route === undefined) throw new Error('no route GET /api/v1/agents/{namespace}/{name}')
  const dataDir = tempDir('bench-gateway-')
  const common = {
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    AUTO_APPLY_CONFIG: 'false',
    SECRET_KEY: randomBytes(32).toString('base64url'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64url'),
    DATABASE_PASSWORD: randomBytes(16).toString('hex'),
    QUEUE_STORE_URL: '',
    DATABASE_HOST: '',
  }
  if (onlyEdge) {
    try {
      return await edgeCases(rows, start, load, route.id, common)
    } finally {
      for (const child of started.reverse()) await child.stop()
      removeTempDir(dataDir)
    }
  }
  try {
    const hello = await start('uws-hello', 'uws-hello.ts', {})
    await load(
      'uws hello-world (baseline)',
      { url: `http://127.0.0.1:${String(hello.info.port)}/`, pid: hello.pid },
      { baseline: true },
    )
    await hello.stop()

    const platform = await start('platform', 'platform.ts', {
      ...common,
      ROLES: 'all',
      NATS_URL: '',
      DATABASE_URL: '',
      NATS_PREFIX: '',
      BENCH_REMOVE_DATA_DIR: '1',
    })
    const { token, natsUrl, databaseUrl } = platform.info
    if (token === undefined || natsUrl === undefined || databaseUrl === undefined)
      throw new Error('platform child reported no token / natsUrl / databaseUrl')
    const auth = { authorization: `Bearer ${token}` }
    const base = `http://127.0.0.1:${String(platform.info.port)}`
    const localServers = childPids(platform.pid) // nats-server and Postgres
    // the single-node nats-server takes no anonymous client: the split processes use its platform
    // seed (its gateway user's permissions name the subjects without the prefix these runs use)
    const natsAuth = { NATS_NKEY_FILE: join(dataDir, 'nats', 'platform.nk') }
    let agent: string
    if (onlySplit) agent = await expectOk(`${base}${JSON_PATH}`, auth)
    else {
      await load(
        'gateway GET /health',
        { url: `${base}/health`, pid: platform.pid, helperPids: localServers },
        { limit: LIMIT },
      )
      const floor = await start('floor', 'uws-jose-pg.ts', { SECRET_KEY: common.SECRET_KEY, DATABASE_URL: databaseUrl })
      await load(
        FLOOR_CASE,
        {
          url: `http://127.0.0.1:${String(floor.info.port)}${JSON_PATH}`,
          headers: auth,
          pid: floor.pid,
          helperPids: localServers,
        },
        {
          note: 'the floor of the resource read, a process of its own (servers/uws-jose-pg.ts); "other" is Postgres (and the idle nats-server)',
        },
        databaseUrl,
      )
      await floor.stop()
      agent = await load(
        `GET ${JSON_PATH}, gateway+service in 1 process`,
        { url: `${base}${JSON_PATH}`, headers: auth, pid: platform.pid, helperPids: localServers },
        {
          reference: FLOOR_CASE,
          totalCpu: true,
          rpsLimit: FLOOR_RPS,
          limit: FLOOR_CPU,
          note: 'CPU is the whole platform process: gateway, resource service (rows from memory, src/resources/row-cache.ts; the caller from the AUTH_CACHE KV; the route answered in memory, src/api/local-rpc.ts) and its Postgres client (ROLES=all); "other" is nats-server + Postgres; req/s and CPU (Σ: summed over every process) against the floor',
        },
        databaseUrl,
      )

      // the request log on vs off: a second platform like the first with ANALYTICS_HOST set,
      // measured next to the first one again, so both rows see the same machine
      const chTeardowns: (() => unknown)[] = []
      const ch = await startClickHouse({ teardown: (fn) => chTeardowns.push(fn) })
      try {
        if (ch.skip !== false) process.stderr.write(`  request log rows skipped: ${ch.skip}\n`)
        else {
          const logDir = tempDir('bench-gateway-logs-')
          const logged = await start('platform-logs', 'platform.ts', {
            ...common,
            DATA_DIR: logDir,
            ROLES: 'all',
            NATS_URL: '',
            DATABASE_URL: '',
            NATS_PREFIX: '',
            BENCH_REMOVE_DATA_DIR: '1',
            ANALYTICS_HOST: ch.host,
            ANALYTICS_PORT: String(ch.port),
            ANALYTICS_USER: ch.user,
            ANALYTICS_PASSWORD: ch.password,
          })
          const loggedToken = logged.info.token
          if (loggedToken === undefined) throw new Error('platform-logs child reported no token')
          await load(
            `GET ${JSON_PATH}, 1 process, request log on (ClickHouse)`,
            {
              url: `http://127.0.0.1:${String(logged.info.port)}${JSON_PATH}`,
              headers: { authorization: `Bearer ${loggedToken}` },
              pid: logged.pid,
              helperPids: childPids(logged.pid),
            },
            {
              reference: LOG_OFF_CASE,
              rpsLimit: LOG_RPS,
              note: 'every request recorded (client address and traceparent read, batches of ≤500 over NATS, inserted by the same process into a ClickHouse 18.16 started by the bench); CPU is the platform process; ClickHouse is not counted',
            },
          )
          await logged.stop()
          const written = (await ch.sql('SELECT count() FROM platform_logs.request_logs')).trim()
          process.stderr.write(`  request log: ${written} rows in ClickHouse after the run\n`)
          await load(LOG_OFF_CASE, {
            url: `${base}${JSON_PATH}`,
            headers: auth,
            pid: platform.pid,
            helperPids: localServers,
          })
          removeTempDir(logDir)
        }
      } finally {
        for (const fn of chTeardowns.reverse()) await fn()
      }

      // Traces: two processes alike but for tracing, one after the other, on the same servers
      const second = { ...common, ...natsAuth, NATS_URL: natsUrl, DATABASE_URL: databaseUrl, ROLES: 'all' }
      const untraced = await start('platform-untraced', 'platform.ts', { ...second, NATS_PREFIX: 'untraced' })
      await load(
        UNTRACED_CASE,
        {
          url: `http://127.0.0.1:${String(untraced.info.port)}${JSON_PATH}`,
          headers: auth,
          pid: untraced.pid,
          helperPids: [platform.pid, ...localServers],
        },
        {
          note: "a second ROLES=all process on the first one's nats-server and Postgres (its own NATS_PREFIX), tracing off (the default); CPU is that process only",
        },
      )
      await untraced.stop()
      const sink = await start('otlp-sink', 'otlp-sink.ts', {})
      const traced = await start('platform-traced', 'platform.ts', {
        ...second,
        NATS_PREFIX: 'traced',
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${String(sink.info.port)}`,
        OTEL_EXPORT_DELAY_MS: '100',
      })
      await load(
        `GET ${JSON_PATH}, 1 process, tracing on`,
        {
          url: `http://127.0.0.1:${String(traced.info.port)}${JSON_PATH}`,
          headers: auth,
          pid: traced.pid,
          helperPids: [sink.pid, platform.pid, ...localServers],
        },
        {
          reference: UNTRACED_CASE,
          note: 'the same process with OTEL_EXPORTER_OTLP_ENDPOINT set: every request sampled (a gateway and a handler span), exported as OTLP/HTTP JSON every 100 ms to a local receiver; CPU is that process only, "other" includes the receiver',
        },
      )
      await traced.stop()
      await sink.stop()
    }
    const split = { ...common, ...natsAuth, NATS_URL: natsUrl, DATABASE_URL: databaseUrl, NATS_PREFIX: 'bench' }
    const resources = await start('resources', 'platform.ts', { ...split, ROLES: 'resources' })
    const gateway = await start('gateway', 'platform.ts', { ...split, ROLES: 'gateway' })
    await load(
      `GET ${JSON_PATH}, ROLES=gateway process`,
      {
        url: `http://127.0.0.1:${String(gateway.info.port)}${JSON_PATH}`,
        headers: auth,
        pid: gateway.pid,
        helperPids: [resources.pid, platform.pid],
      },
      {
        limit: LIMIT,
        note: 'CPU is the ROLES=gateway process only; "other" is the ROLES=resources process, nats-server and Postgres',
      },
    )
    await gateway.stop()
    await resources.stop()

    const stubbed = { ...common, ...natsAuth, NATS_URL: natsUrl, NATS_PREFIX: 'stub' }
    const stub = await start('stub-service', 'stub-service.ts', {
      ...stubbed,
      BENCH_STUB_ROUTE: route.id,
      BENCH_STUB_BODY: agent,
    })
    const fast = await start('gateway-stub', 'platform.ts', { ...stubbed, ROLES: 'gateway' })
    await load(
      `GET ${JSON_PATH}, ROLES=gateway, stub service`,
      {
        url: `http://127.0.0.1:${String(fast.info.port)}${JSON_PATH}`,
        headers: auth,
        pid: fast.pid,
        helperPids: [stub.pid, platform.pid],
      },
      {
        limit: LIMIT,
        note: 'CPU is the ROLES=gateway process only, the route answered by a stub service (serveRpc, canned reply of the same bytes); "other" is the stub, nats-server and Postgres',
      },
    )
    await fast.stop()
    // the floor of the edge process: a bare uWS server forwarding over NATS to the same stub, with
    // nats.js `nc.request` per call and with the gateway's mux (gateway/rpc-mux.ts)
    for (const mode of ['request', 'mux'] as const) {
      const fwd = await start(`uws-nats-forward-${mode}`, 'uws-nats-forward.ts', {
        ...stubbed,
        BENCH_STUB_ROUTE: route.id,
        BENCH_FORWARD_MODE: mode,
      })
      await load(
        `floor: bare uWS forwarding over NATS (${mode === 'request' ? 'nats.js nc.request' : 'gateway/rpc-mux.ts'}), stub service`,
        {
          url: `http://127.0.0.1:${String(fwd.info.port)}${JSON_PATH}`,
          pid: fwd.pid,
          helperPids: [stub.pid, platform.pid],
        },
        {
          note: 'servers/uws-nats-forward.ts: no auth, validation or request cycle, the request id and path parameters in NATS headers (encodeRequest), the reply bytes copied to the socket; CPU is that process only',
        },
      )
      await fwd.stop()
    }
  } finally {
    for (const child of started.reverse()) await child.stop()
    removeTempDir(dataDir)
  }
  return rows
}

type Start = (name: string, script: string, env: Record<string, string>) => Promise<ServerChild>
type Load = (label: string, target: LoadTarget, extra?: Partial<Row>) => Promise<string>

/** BENCH_GATEWAY_ONLY=edge (above). */
async function edgeCases(
  rows: Row[],
  start: Start,
  load: Load,
  routeId: string,
  common: Record<string, string>,
): Promise<Row[]> {
  const hello = await start('uws-hello', 'uws-hello.ts', {})
  await load(
    'uws hello-world (baseline)',
    { url: `http://127.0.0.1:${String(hello.info.port)}/`, pid: hello.pid },
    { baseline: true },
  )
  await hello.stop()
  const dir = tempDir('bench-gateway-edge-')
  const nats = await startNats({ dir, log: createLogger({ level: 'warn', svc: 'bench-gateway' }) })
  try {
    const env = { ...common, NATS_URL: nats.url, NATS_PREFIX: 'edge' }
    const stub = await start('stub-service', 'stub-service.ts', {
      ...env,
      BENCH_STUB_ROUTE: routeId,
      BENCH_STUB_BODY: EDGE_BODY,
    })
    const token = await issueAccessToken(common['SECRET_KEY'] ?? '', { sub: randomUUID(), email: 'edge@bench' }, 60)
    const gateway = await start('gateway', 'platform.ts', { ...env, ROLES: 'gateway' })
    const request = await start('forward-request', 'uws-nats-forward.ts', {
      ...env,
      BENCH_STUB_ROUTE: routeId,
      BENCH_FORWARD_MODE: 'request',
    })
    const mux = await start('forward-mux', 'uws-nats-forward.ts', {
      ...env,
      BENCH_STUB_ROUTE: routeId,
      BENCH_FORWARD_MODE: 'mux',
    })
    const helpers = [stub.pid, nats.pid]
    const url = (c: ServerChild) => `http://127.0.0.1:${String(c.info.port)}${JSON_PATH}`
    for (const round of [1, 2]) {
      await load(
        `GET ${JSON_PATH}, ROLES=gateway, stub service, round ${String(round)}`,
        { url: url(gateway), headers: { authorization: `Bearer ${token}` }, pid: gateway.pid, helperPids: helpers },
        {
          limit: LIMIT,
          note: 'a ROLES=gateway process (JWT verified, cached; params and query checked; request cycle; the call over NATS by gateway/rpc-mux.ts) in front of a stub service answering ~0.9 kB of JSON (servers/stub-service.ts) on a nats-server of the bench (no credentials); CPU is the gateway process only, "other" the stub and nats-server',
        },
      )
      await load(
        `floor: bare uWS forwarding over NATS by nats.js nc.request, round ${String(round)}`,
        { url: url(request), pid: request.pid, helperPids: helpers },
        {
          note: 'servers/uws-nats-forward.ts: no auth, validation or request cycle, the request id and path parameters in NATS headers (encodeRequest), the reply bytes copied to the socket; one nc.request per call; CPU is that process only',
        },
      )
      await load(
        `floor: bare uWS forwarding over NATS by gateway/rpc-mux.ts, round ${String(round)}`,
        { url: url(mux), pid: mux.pid, helperPids: helpers },
        {
          note: "the same forwarder with the gateway's mux (one inbox subscription, a counter, one timeout sweep) instead of nc.request; CPU is that process only",
        },
      )
    }
    return rows
  } finally {
    await nats.stop()
    removeTempDir(dir)
  }
}

const bench: Benchmark = {
  name: NAME,
  description:
    'platform gateway (GET /health, authenticated JSON route over NATS) vs a bare uWebSockets.js hello-world',
  run,
}
export default bench
