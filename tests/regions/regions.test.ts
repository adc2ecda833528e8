import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect, headers, type NatsConnection } from '@nats-io/transport-node'
import pg from 'pg'
import t from 'tap'
import { freePort, findNatsServer } from '../../src/platform/local-services.ts'
import { ENCRYPTION_KEY, SECRET_KEY } from '../helpers/env.ts'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.ts'
import {
  regionsUnsupported,
  startRegionsTopology,
  type Region,
  type RegionsTopology,
} from '../helpers/nats-topology.ts'
import { pollUntil, superadminToken } from '../platform/single-node.ts'
import { readServices } from '../setup/services.ts'
import { parseSse, type SseEvent } from '../helpers/sse-events.ts'

/*
 * The platform across regions (docs/multi-region.md): a hub cluster of three nats-servers
 * (JetStream, every stream and bucket R3) with the internal roles on the hub (one process, its own
 * gateway too), and two regions, each a network namespace holding a leaf node and an edge gateway
 * (ROLES=gateway) that connects only to its leaf. Each leaf reaches the hub through a relay that
 * adds 40 ms each way (no netem in this kernel). TLS everywhere, from a throwaway CA.
 *
 * Shown: a chat from region b streams over SSE with its actor on the hub and resumes after a
 * reconnect; kill -9 of one hub server under load (jobs, chat messages, events through the edges)
 * loses nothing accepted; a cut region answers 503 at once and recovers by itself; what an edge
 * adds per request, measured; and what each region's identities cannot do.
 */
t.setTimeout(420_000)
const skip = regionsUnsupported()
if (skip !== undefined) {
  t.plan(0, skip)
} else {
  await main()
}

interface Proc {
  child: ChildProcess
  base: string
  output: () => string
}

/** `src/cli.ts start` with `env` (in a region's namespace when `region` is given); resolves once it printed its API address. */
function startPlatformProcess(topo: RegionsTopology, env: NodeJS.ProcessEnv, region?: Region): Promise<Proc> {
  const args = ['--import', 'tsx', 'src/cli.ts', 'start']
  const child =
    region === undefined
      ? spawn(process.execPath, args, {
          cwd: join(import.meta.dirname, '..', '..'),
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        })
      : topo.spawnIn(region, process.execPath, args, env)
  let out = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()))
  const host = region === undefined ? '127.0.0.1' : region.nsIp
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 120 s:\n${out}`)), 120_000)
    const onExit = (code: number | null) => {
      clearTimeout(timer)
      reject(new Error(`exited with ${String(code)} before it was up:\n${out}`))
    }
    const check = () => {
      const m = /API\s+http:\/\/localhost:(\d+)/.exec(out)
      if (m !== null && /Stop\s+Ctrl-C/.test(out)) {
        clearTimeout(timer)
        child.off('exit', onExit)
        resolve({ child, base: `http://${host}:${String(m[1])}`, output: () => out })
      }
    }
    child.stdout?.on('data', check)
    child.once('exit', onExit)
  })
}

function stop(p: Proc | undefined): Promise<void> {
  if (p === undefined || p.child.exitCode !== null || p.child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    p.child.once('exit', () => resolve())
    p.child.kill('SIGINT')
  })
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] ?? NaN
}

async function main(): Promise<void> {
  const services = readServices()
  const dbName = `regions_${String(process.pid)}`
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: `${services.pgBase}/postgres` })
    await c.connect()
    await c.query(sql).finally(() => c.end())
  }
  let topo: RegionsTopology
  let hub: Proc
  const edges: Record<string, Proc> = {}
  let llm: FakeLlm
  let token: string
  let platformNc: NatsConnection
  const dataDir = mkdtempSync(join(tmpdir(), 'regions-platform-'))

  const baseEnv = (): NodeJS.ProcessEnv => ({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    NATS_PREFIX: '',
    NATS_TLS_CA_FILE: topo.tls.caFile,
    NATS_TLS_CERT_FILE: topo.tls.certFile,
    NATS_TLS_KEY_FILE: topo.tls.keyFile,
    SECRET_KEY,
    ENCRYPTION_KEY,
    DATABASE_PASSWORD: 'unused',
    SUPERADMIN_EMAIL: 'admin@test.local',
    DATABASE_HOST: '',
  })
  const hubEnv = (): NodeJS.ProcessEnv => ({
    ...baseEnv(),
    HOST: '127.0.0.1',
    PORT: '0',
    CONSOLE_PORT: '0',
    NATS_URL: topo.topology.hubUrl,
    NATS_NKEY_FILE: topo.topology.platformSeedFile,
    NATS_STREAM_REPLICAS: '3',
    DATABASE_URL: `${services.pgBase}/${dbName}`,
    // every request over NATS, so the hub gateway's numbers compare with an edge's
    RPC_IN_PROCESS: 'false',
    SANDBOX_MIN_SIZE: '1',
    SANDBOX_MIN_IDLE: '1',
    // a turn whose client left asks the gateways whether anyone resumed after 1 s: from region b
    // the answer has to cross the leaf link
    SSE_RECONNECT_WINDOW_SECONDS: '1',
  })

  async function call(
    base: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown>; ms: number }> {
    const t0 = performance.now()
    const r = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await r.text()
    const ms = performance.now() - t0
    let parsed: Record<string, unknown> = {}
    try {
      parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>)
    } catch {
      parsed = { text }
    }
    return { status: r.status, body: parsed, ms }
  }

  t.before(async () => {
    const t0 = performance.now()
    llm = await startFakeLlm()
    t.teardown(() => llm.close())
    topo = await startRegionsTopology(t, { regions: ['a', 'b'] })
    t.comment(
      `nats topology (3 hub servers, 2 leaves, ${findNatsServer() ?? ''}) up after ${String(Math.round(performance.now() - t0))} ms`,
    )
    await admin(`create database ${dbName} template ${services.template}`)
    t.teardown(async () => {
      await Promise.all(Object.values(edges).map((e) => stop(e)))
      await stop(hub)
      await admin(`drop database if exists ${dbName} with (force)`)
      rmSync(dataDir, { recursive: true, force: true })
    })
    hub = await startPlatformProcess(topo, hubEnv())
    t.comment(`hub platform up after ${String(Math.round(performance.now() - t0))} ms`)
    token = superadminToken(hubEnv())
    for (const region of topo.regions) {
      edges[region.name] = await startPlatformProcess(
        topo,
        {
          ...baseEnv(),
          ROLES: 'gateway',
          HOST: region.nsIp,
          PORT: '8000',
          NATS_URL: region.layout.clientUrl,
          NATS_NKEY_FILE: region.layout.gatewaySeedFile,
          // an edge may be the first to need the FILES or WEBHOOKS bucket, and creates it
          NATS_STREAM_REPLICAS: '3',
          DATABASE_URL: '',
        },
        region,
      )
    }
    t.comment(`edge gateways up after ${String(Math.round(performance.now() - t0))} ms`)
    platformNc = await topo.hubClient()
    t.teardown(() => platformNc.close())
    const setup: [string, unknown][] = [
      [
        '/api/v1/llm-providers',
        {
          name: 'fake',
          provider_type: 'openai',
          api_endpoint: llm.endpoint('openai'),
          api_key: 'k',
          default_model: 'm',
          is_default: true,
        },
      ],
      ['/api/v1/agents', { namespace: 'geo', name: 'talker', system_prompt: 'Talk.' }],
      [
        '/api/v1/functions',
        { namespace: 'geo', name: 'echo', code: 'def handler(input, context):\n    return {"n": input["n"]}\n' },
      ],
    ]
    for (const [path, body] of setup) {
      const r = await call(hub.base, 'POST', path, body)
      if (r.status !== 201) throw new Error(`${path}: ${String(r.status)} ${JSON.stringify(r.body)}`)
    }
  })

  const edge = (name: string): string => (edges[name] as Proc).base
  const region = (name: string): Region => topo.regions.find((r) => r.name === name) as Region

  t.test('every stream and bucket on the hub is R3', async (t) => {
    // the FILES and WEBHOOKS buckets are created on first use
    t.equal((await call(edge('b'), 'POST', '/api/v1/collections', { namespace: 'geo', name: 'docs' })).status, 201)
    const up = await fetch(`${edge('b')}/files/geo/docs?name=x.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
      body: 'hello from region b',
    })
    t.equal(up.status, 201, 'a file streams in through an edge')
    const jsm = await jetstreamManager(platformNc)
    const replicas: Record<string, number> = {}
    for await (const s of jsm.streams.list()) replicas[s.config.name] = s.config.num_replicas
    t.ok(Object.keys(replicas).length >= 12, `streams: ${Object.keys(replicas).join(', ')}`)
    t.same(
      Object.entries(replicas).filter(([, n]) => n !== 3),
      [],
      'no stream with fewer than 3 replicas',
    )
  })

  t.test('a chat from region b streams over SSE with its actor on the hub, and resumes', async (t) => {
    const chat = await call(edge('b'), 'POST', '/agents/geo/talker/chats', {})
    t.equal(chat.status, 201)
    const chatId = chat.body.id as string
    const words = Array.from({ length: 30 }, (_, i) => `w${String(i)} `)
    // about 2.4 s of answer: longer than the reconnect window, so the hub asks who still listens
    llm.push({ text: words, chunk_delay_ms: 80 })
    const ac = new AbortController()
    const res = await fetch(`${edge('b')}/chats/${chatId}/messages/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'a long answer please' }),
      signal: ac.signal,
    })
    t.equal(res.status, 200)
    let text = ''
    const decoder = new TextDecoder()
    let first: SseEvent[] = []
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true })
        first = parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2))
        if (first.length >= 5) {
          ac.abort()
          break
        }
      }
    } catch (err) {
      if (!ac.signal.aborted) throw err
    }
    first = first.slice(0, 5)
    const channel = (await call(edge('b'), 'GET', `/chats/${chatId}`)).body.active_channel_id as string
    t.type(channel, 'string', 'the turn is still running after the client left')
    const last = first.at(-1)?.id as number
    const rest = await fetch(`${edge('b')}/chats/${chatId}/stream/${channel}`, {
      headers: { authorization: `Bearer ${token}`, 'last-event-id': String(last) },
    })
    t.equal(rest.status, 200)
    const restEvents = parseSse(await rest.text())
    t.ok(
      restEvents.every((e) => e.id > last),
      'nothing before the resume point',
    )
    const all = [...first, ...restEvents]
    t.equal(all.at(-1)?.event, 'done', 'the turn ended with done (not abandoned: the hub heard the resumed client)')
    t.equal(
      all
        .filter((e) => e.event === 'message')
        .map((e) => (e.data as { content: string | null }).content ?? '')
        .join(''),
      words.join(''),
      'every delta exactly once, in order',
    )
  })

  t.test('what an edge adds per request, measured (not asserted)', async (t) => {
    const sample = async (base: string) => {
      const ms: number[] = []
      for (let i = 0; i < 15; i++) {
        const r = await call(base, 'GET', '/api/v1/agents')
        t.equal(r.status, 200)
        ms.push(r.ms)
      }
      return median(ms.slice(3))
    }
    const hubMs = await sample(hub.base)
    const a = await sample(edge('a'))
    const b = await sample(edge('b'))
    t.comment(
      `GET /api/v1/agents median: hub gateway ${hubMs.toFixed(1)} ms, edge a ${a.toFixed(1)} ms (+${(a - hubMs).toFixed(1)}), edge b ${b.toFixed(1)} ms (+${(b - hubMs).toFixed(1)}); the link adds ${String(2 * topo.delayMs)} ms per round trip`,
    )
  })

  t.test('credentials: no identity in a region but its gateway gets a request to the services', async (t) => {
    const outcome = (nc: NatsConnection, subject: string, hdrs: Record<string, string> = {}) => {
      const h = headers()
      for (const [k, v] of Object.entries(hdrs)) h.set(k, v)
      return nc.request(subject, '{}', { timeout: 3_000, headers: h }).then(
        () => 'answered',
        (err: unknown) => String(err),
      )
    }
    const b = region('b')
    const regionEvents = await topo.leafClient(b, b.layout.eventsSeedFile as string)
    t.teardown(() => regionEvents.close())
    t.match(
      await outcome(regionEvents, 'rpc.users.list', { 'X-Caller': 'admin' }),
      /Permissions Violation for Publish to "rpc\.users\.list"/,
      "region b's events user may not publish on rpc.>",
    )
    // what it is for: the EVENTS stream, on the hub, through the leaf
    t.equal((await (await jetstreamManager(regionEvents)).streams.info('EVENTS')).config.name, 'EVENTS')
    const hubEvents = await topo.hubClient(topo.topology.eventsSeedFile)
    t.teardown(() => hubEvents.close())
    t.match(await outcome(hubEvents, 'rpc.users.list', { 'X-Caller': 'admin' }), /Permissions Violation for Publish/)
    const gateway = await topo.leafClient(b, b.layout.gatewaySeedFile)
    t.teardown(() => gateway.close())
    const sub = gateway.subscribe('rpc.>')
    t.match(
      await sub.closed.then(String, String),
      /Permissions Violation for Subscription/,
      'a gateway answers no request',
    )
    t.equal(await outcome(gateway, 'rpc.users.list'), 'answered', 'the gateway user forwards requests')
    // the leaf-link password opens no client connection on the hub
    const asClient = await connect({
      servers: topo.topology.hubUrl.split(','),
      user: b.layout.leafLink.user,
      pass: b.layout.leafLink.password,
      tls: { caFile: topo.tls.caFile, certFile: topo.tls.certFile, keyFile: topo.tls.keyFile },
      maxReconnectAttempts: 0,
    }).then(
      async (nc) => {
        await nc.close()
        return 'connected'
      },
      (e: unknown) => String(e),
    )
    t.match(asClient, /Authorization Violation/i, 'the leaf-link user is for leaf connections only')
  })

  t.test('the leaf link carries only what an edge needs (a leaf with an all-powerful local user)', async (t) => {
    // A rogue leaf on region b's link: whoever holds the link's password gets no more than an edge.
    const b = region('b')
    const dir = mkdtempSync(join(tmpdir(), 'rogue-leaf-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const port = await freePort()
    const urls = b.relays.map(
      (r) =>
        `tls://${encodeURIComponent(b.layout.leafLink.user)}:${encodeURIComponent(b.layout.leafLink.password)}@${b.hostIp}:${String(r.port)}`,
    )
    const tls = `tls: { ca_file: ${JSON.stringify(topo.tls.caFile)}, cert_file: ${JSON.stringify(topo.tls.certFile)}, key_file: ${JSON.stringify(topo.tls.keyFile)} }`
    writeFileSync(
      join(dir, 'rogue.conf'),
      `server_name: rogue\nlisten: "127.0.0.1:${String(port)}"\nhttp: "127.0.0.1:${String(await freePort())}"\n` +
        `accounts { PLATFORM { users: [ { user: root, password: root } ] } }\n` +
        `leafnodes { remotes: [ { urls: ${JSON.stringify(urls)}, account: "PLATFORM", ${tls} } ] }\n`,
    )
    const rogue = spawn(findNatsServer() as string, ['-c', join(dir, 'rogue.conf'), '-l', join(dir, 'rogue.log')], {
      stdio: 'ignore',
    })
    t.teardown(() => rogue.kill('SIGKILL'))
    const nc = await pollUntil('the rogue leaf to accept clients', () =>
      connect({ servers: `127.0.0.1:${String(port)}`, user: 'root', pass: 'root', inboxPrefix: '_INBOX_gateway_b' }),
    )
    t.teardown(() => nc.close())
    // the hub answers probes on a subject an edge may use: ordered after anything sent before them
    const probe = platformNc.subscribe('rpc.regions.probe', { callback: (_e, m) => void m.respond('pong') })
    const leaked: string[] = []
    const trap = platformNc.subscribe('jobs.>', { callback: (_e, m) => void leaked.push(m.subject) })
    t.teardown(() => {
      probe.unsubscribe()
      trap.unsubscribe()
    })
    await platformNc.flush()
    const ask = (subject: string) =>
      nc.request(subject, '', { timeout: 2_000 }).then(
        () => 'answered',
        (e: unknown) => String(e),
      )
    await pollUntil('the rogue leaf linked', async () =>
      (await ask('rpc.regions.probe')) === 'answered' ? true : undefined,
    )
    t.equal(await ask('$JS.hub.API.STREAM.INFO.SSE'), 'answered', 'what an edge reads: the SSE stream')
    t.not(await ask('$JS.hub.API.STREAM.INFO.KV_AUTH_CACHE'), 'answered', 'not AUTH_CACHE')
    t.not(await ask('$JS.hub.API.STREAM.INFO.JOBS'), 'answered', 'not the JOBS stream')
    t.not(await ask('$JS.hub.API.STREAM.DELETE.SSE'), 'answered', 'no stream deleted (SSE still there below)')
    nc.publish('jobs.fn.forged', '{}')
    t.equal(await ask('rpc.regions.probe'), 'answered')
    t.same(leaked, [], 'a job published on the leaf never reaches the hub')
    const kv: string[] = []
    const kvSub = nc.subscribe('$KV.>', { callback: (_e, m) => void kv.push(m.subject) })
    let live = false
    const liveSub = nc.subscribe('sse.live.regions-probe', {
      callback: () => {
        live = true
      },
    })
    await nc.flush()
    // each round publishes a KV write and then a live event: had the write crossed, it came first
    await pollUntil(
      'a live event to reach the rogue leaf',
      async () => {
        platformNc.publish('$KV.AUTH_CACHE.forged', 'x')
        platformNc.publish('sse.live.regions-probe', 'x')
        await platformNc.flush()
        return live ? true : undefined
      },
      10_000,
      100,
    )
    kvSub.unsubscribe()
    liveSub.unsubscribe()
    t.same(kv, [], 'no KV write of the hub reaches the leaf')
    t.equal((await (await jetstreamManager(platformNc)).streams.info('SSE')).config.name, 'SSE')
  })

  t.test('kill -9 of one hub server under load loses nothing accepted', async (t) => {
    const jsm = await jetstreamManager(platformNc)
    const leader = (await jsm.streams.info('JOBS')).cluster?.leader as string
    const victim = topo.hub.find((s) => s.name === leader)
    t.ok(victim, `the JOBS stream leader is ${leader}`)
    const chats: string[] = []
    for (let i = 0; i < 2; i++) {
      const c = await call(edge('a'), 'POST', '/agents/geo/talker/chats', {})
      t.equal(c.status, 201)
      chats.push(c.body.id as string)
    }
    const acceptedJobs: string[] = []
    const acceptedMessages = new Map<string, string[]>()
    const statuses: number[] = []
    // what a request that answered anything else said, for the failure message
    const unexpected: string[] = []
    const note = (what: string, r: { status: number; body: unknown }) => {
      if (![200, 202, 409, 503, 504].includes(r.status))
        unexpected.push(`${what}: ${String(r.status)} ${JSON.stringify(r.body)}`)
    }
    const state = { running: true, jobs: true }
    let n = 0
    const jobLoop = async () => {
      while (state.running && state.jobs) {
        const r = await call(edge('b'), 'POST', '/functions/geo/echo/execute/async', { input: { n: n++ } }).catch(
          () => ({ status: 0, body: {} as Record<string, unknown>, ms: 0 }),
        )
        statuses.push(r.status)
        note('execute/async', r)
        if (r.status === 202) acceptedJobs.push(r.body.execution_id as string)
      }
    }
    const chatLoop = async (chatId: string) => {
      const sent: string[] = []
      acceptedMessages.set(chatId, sent)
      for (let i = 0; state.running; i++) {
        const content = `m${String(i)}`
        const r = await call(edge('a'), 'POST', `/chats/${chatId}/messages`, { content }).catch(() => ({
          status: 0,
          body: {},
          ms: 0,
        }))
        statuses.push(r.status)
        note('chat message', r)
        if (r.status === 200) sent.push(content)
        // a turn that failed mid-way may still hold the chat for a moment: the next one may answer 409
      }
    }
    const loops = [jobLoop(), jobLoop(), ...chats.map((c) => chatLoop(c))]
    const messagesAccepted = () => [...acceptedMessages.values()].reduce((n, m) => n + m.length, 0)
    await pollUntil('some load accepted', async () =>
      acceptedJobs.length >= 5 && messagesAccepted() >= 2 ? true : undefined,
    )
    const before = acceptedJobs.length
    const messagesBefore = messagesAccepted()
    await victim?.kill9()
    const killedAt = performance.now()
    await pollUntil('jobs accepted with one hub server down', async () =>
      acceptedJobs.length >= before + 10 ? true : undefined,
    )
    t.comment(
      `${String(acceptedJobs.length - before)} jobs accepted in ${String(Math.round(performance.now() - killedAt))} ms with ${leader} down`,
    )
    await victim?.start()
    // back in the cluster and caught up on JOBS
    await pollUntil(
      `${leader} current again`,
      async () => {
        const info = await jsm.streams.info('JOBS')
        const names = [
          info.cluster?.leader,
          ...(info.cluster?.replicas ?? []).filter((r) => r.current).map((r) => r.name),
        ]
        return names.includes(leader) ? true : undefined
      },
      60_000,
      250,
    )
    state.jobs = false
    // the chats take messages again (a turn caught by the kill may have ended in a 504)
    await pollUntil(
      'a chat message accepted after the kill',
      async () => (messagesAccepted() > messagesBefore ? true : undefined),
      90_000,
      250,
    )
    state.running = false
    await Promise.all(loops)
    const messages = [...acceptedMessages.values()].reduce((s, m) => s + m.length, 0)
    const counts = new Map<number, number>()
    for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1)
    t.comment(
      `accepted: ${String(acceptedJobs.length)} jobs, ${String(messages)} chat messages; statuses seen: ${[...counts].map(([s, c]) => `${String(s)}×${String(c)}`).join(', ')}`,
    )
    // A request (or its reply) in flight on a connection to the killed server is lost with it: the
    // edge, whose own link is fine, waits for the RPC timeout (504). Not accepted, so nothing the
    // client was told is lost; the client retries.
    t.ok(
      statuses.every((s) => [200, 202, 409, 503, 504].includes(s)),
      'only accepted, busy (409), unavailable (503) or timed out (504) — never a 500',
      { unexpected },
    )
    if (unexpected.length > 0)
      t.comment(
        `the hub's handler errors:\n${hub
          .output()
          .split('\n')
          .filter((l) => l.includes('handler failed'))
          .slice(-5)
          .join('\n')}`,
      )
    for (const id of acceptedJobs) {
      const done = await pollUntil(
        `execution ${id}`,
        async () => {
          const r = await call(edge('b'), 'GET', `/executions/${id}`)
          return r.body.status === 'completed' || r.body.status === 'failed' ? r.body : undefined
        },
        120_000,
        200,
      )
      if (done.status !== 'completed') t.fail(`execution ${id} ${String(done.status)}`)
    }
    t.pass(`every accepted job completed (${String(acceptedJobs.length)})`)
    for (const [chatId, sent] of acceptedMessages) {
      const chat = await call(edge('a'), 'GET', `/chats/${chatId}`)
      const users = (chat.body.messages as { role: string; content: string }[])
        .filter((m) => m.role === 'user')
        .map((m) => m.content)
      t.same(
        sent.filter((c) => !users.includes(c)),
        [],
        `every accepted message of chat ${chatId} is in its history (${String(sent.length)})`,
      )
    }
    // every accepted job's completion is in EVENTS, read by region b's events user through its leaf
    const b = region('b')
    const ev = await topo.leafClient(b, b.layout.eventsSeedFile as string)
    t.teardown(() => ev.close())
    const consumer = await jetstream(ev).consumers.get('EVENTS', {
      // one filter as a string: filter_subject, which 2.9 understands too
      filter_subjects: 'events.execution.geo.echo.completed',
      deliver_policy: DeliverPolicy.All,
    })
    const seen = new Set<string>()
    const want = new Set(acceptedJobs)
    // The events are published from the JOB_STATE mirror (src/jobs/mirror.ts), behind the state a
    // GET reads: read on until every accepted job's event arrived, or give up after 60 s.
    const msgs = await consumer.consume()
    const giveUp = setTimeout(() => void msgs.close(), 60_000)
    for await (const m of msgs) {
      seen.add((m.json() as { execution_id: string }).execution_id)
      if ([...want].every((id) => seen.has(id))) break
    }
    clearTimeout(giveUp)
    await msgs.close()
    t.same(
      [...want].filter((id) => !seen.has(id)),
      [],
      `every accepted job's completed event is in EVENTS (${String(seen.size)} events)`,
    )
  })

  t.test('a cut link: the edge answers 503 at once, and recovers by itself', async (t) => {
    const a = region('a')
    t.equal((await call(edge('a'), 'GET', '/api/v1/agents')).status, 200)
    const cutAt = performance.now()
    await a.cut()
    await pollUntil('leaf a to notice', async () => ((await a.leafLinks()) === 0 ? true : undefined), 10_000, 20)
    const noticed = performance.now() - cutAt
    const down = await call(edge('a'), 'GET', '/api/v1/agents')
    t.equal(down.status, 503)
    t.equal(down.body.code, 'service.unavailable')
    t.ok(down.ms < 5_000, `answered in ${down.ms.toFixed(1)} ms (no wait for the RPC timeout)`)
    t.equal((await call(edge('b'), 'GET', '/api/v1/agents')).status, 200, 'region b is not affected')
    const restoredAt = performance.now()
    await a.restore()
    await pollUntil(
      'edge a answering again',
      async () => ((await call(edge('a'), 'GET', '/api/v1/agents')).status === 200 ? true : undefined),
      60_000,
      100,
    )
    t.comment(
      `cut: leaf noticed in ${noticed.toFixed(0)} ms, edge answered 503 in ${down.ms.toFixed(1)} ms; restored: answering again after ${(performance.now() - restoredAt).toFixed(0)} ms`,
    )
    t.equal(edges['a']?.child.exitCode, null, 'the edge gateway was not restarted')
  })

  t.test('a silent link (no FIN, no RST): noticed by pings, then 503 at once, and it recovers', async (t) => {
    const a = region('a')
    t.equal((await call(edge('a'), 'GET', '/api/v1/agents')).status, 200)
    const stalledAt = performance.now()
    a.stall()
    // the leaf pings every 5 s and drops the link after 2 unanswered pings
    await pollUntil(
      'leaf a to notice the silence',
      async () => ((await a.leafLinks()) === 0 ? true : undefined),
      40_000,
      100,
    )
    const noticed = performance.now() - stalledAt
    const down = await call(edge('a'), 'GET', '/api/v1/agents')
    t.equal(down.status, 503)
    t.equal(down.body.code, 'service.unavailable')
    const restoredAt = performance.now()
    await a.restore()
    await pollUntil(
      'edge a answering again',
      async () => ((await call(edge('a'), 'GET', '/api/v1/agents')).status === 200 ? true : undefined),
      60_000,
      100,
    )
    t.comment(
      `silent link: leaf noticed after ${noticed.toFixed(0)} ms, then 503 in ${down.ms.toFixed(1)} ms; restored: answering again after ${(performance.now() - restoredAt).toFixed(0)} ms`,
    )
  })
}
