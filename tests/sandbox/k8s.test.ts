import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Duplex } from 'node:stream'
import { KubeConfig, type V1Container, type V1Pod } from '@kubernetes/client-node'
import WebSocket from 'isomorphic-ws'
import t from 'tap'
import { openChannel } from '../../sandbox/channel.ts'
import type { SandboxSpec } from '../../sandbox/driver.ts'
import {
  k8sPodDriver,
  loadKubeConfig,
  resolveNamespace,
  SandboxQuotaError,
  SandboxStartError,
  type K8sPodDriverOptions,
} from '../../sandbox/drivers/k8s.ts'
import {
  podSettingsFromConfig,
  RUNNER_IN_IMAGE,
  sandboxPodManifest,
  START_GATE,
  type SandboxPodSettings,
} from '../../sandbox/drivers/k8s-pod-spec.ts'
import { RUNNER_SOURCE, runnerArgs } from '../../sandbox/runner-path.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * No Kubernetes cluster runs on this machine or in CI. What is covered:
 *  (a) the pod manifest, property by property;
 *  (b) the driver against an HTTP server started here that plays the Kubernetes API for exactly the
 *      calls the driver makes. This is a recorded-exchange test of the REST calls (paths, verbs,
 *      bodies, query, bearer token, the status codes and Status bodies the API server answers
 *      with); it shows the driver speaks that exchange, not that a real API server, scheduler or
 *      kubelet behaves as played here.
 *  (c) the attach: the same server accepts the websocket upgrade with the `ws` package the client
 *      already uses (through isomorphic-ws) and speaks the channel.k8s.io framing (v5: one channel
 *      byte per message, 255 = close stream, status on channel 3). Behind it, like a kubelet, it
 *      starts the pod's container command when the pod turns Running, before anyone attached, and
 *      drops output written while nobody is attached (an attach replays nothing). The "container"
 *      is the manifest's command run as a local process, with two substitutions: the runner's
 *      checkout path for /runner/runner.py, and no --isolated (as root outside a pid namespace the
 *      runner's cleanup would SIGKILL every process of the host). No namespaces, cgroups, seccomp
 *      or image are involved: the pod's isolation itself is not tested here.
 */

const PY = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
const TOKEN = 'test-bearer-token'

const limits = { memoryMb: 256, cpus: 0.5, tmpMb: 100, fileMb: 64, maxProcs: 64, maxFiles: 256 }
const specOf = (id: string): SandboxSpec => ({ id, mode: 'exclusive', limits, network: false })

const settings: SandboxPodSettings = {
  namespace: 'sandboxes',
  image: 'registry.local/platform-functions:1.2.3',
  serviceAccount: 'platform-sandbox',
  releaseName: 'prod',
  nodeSelector: { 'node-pool': 'sandbox', 'kubernetes.io/os': 'linux' },
  tolerations: [{ key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' }],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'arch', operator: 'In', values: ['amd64'] }] }],
      },
    },
  },
  activeDeadlineSeconds: 480,
}

t.test('(a) the pod manifest enforces the sandbox policy', async (t) => {
  const pod = sandboxPodManifest(specOf('abc-123'), settings)
  t.equal(pod.apiVersion, 'v1')
  t.equal(pod.kind, 'Pod')
  t.equal(pod.metadata?.name, 'platform-sbx-abc-123')
  t.equal(pod.metadata?.namespace, 'sandboxes')
  t.same(pod.metadata?.labels, {
    'app.kubernetes.io/name': 'platform-sandbox',
    'app.kubernetes.io/component': 'sandbox',
    'app.kubernetes.io/instance': 'prod',
    'platform.sandbox.id': 'abc-123',
  })
  const ps = pod.spec
  if (ps === undefined) throw new Error('no spec')
  t.equal(ps.restartPolicy, 'Never', 'single-use')
  t.equal(ps.activeDeadlineSeconds, 480, 'active-deadline backstop')
  t.equal(ps.automountServiceAccountToken, false, 'no service account token')
  t.equal(ps.serviceAccountName, 'platform-sandbox')
  t.equal(ps.enableServiceLinks, false)
  t.equal(ps.hostNetwork, false)
  t.equal(ps.hostPID, false)
  t.equal(ps.hostIPC, false)
  t.same(ps.securityContext, {
    runAsNonRoot: true,
    runAsUser: 65534,
    runAsGroup: 65534,
    seccompProfile: { type: 'RuntimeDefault' },
  })
  t.same(ps.nodeSelector, settings.nodeSelector, 'node selector verbatim')
  t.same(ps.tolerations, settings.tolerations, 'tolerations verbatim')
  t.same(ps.affinity, settings.affinity, 'affinity verbatim')
  t.not(ps.affinity, settings.affinity, 'a copy, not the settings object')

  t.equal(ps.containers.length, 1, 'a single container')
  const c = ps.containers[0] as V1Container
  t.equal(c.image, 'registry.local/platform-functions:1.2.3')
  const cmd = c.command ?? []
  t.same(cmd.slice(0, 6), ['python3', '-I', '-S', '-B', '-c', START_GATE], 'python3 -I -S -B with the start gate')
  t.same(
    cmd.slice(6),
    [RUNNER_IN_IMAGE, ...runnerArgs(specOf('abc-123'), { isolated: true })],
    'then /runner/runner.py and the runner args',
  )
  t.ok(cmd.includes('--isolated'))
  t.same(cmd.slice(cmd.indexOf('--memory-mb'), cmd.indexOf('--memory-mb') + 2), ['--memory-mb', '256'])
  t.equal(c.args, undefined)
  t.equal(c.stdin, true)
  t.equal(c.stdinOnce, true)
  t.equal(c.tty, false)
  t.same(c.resources?.requests, { memory: '256Mi', cpu: '500m' })
  t.same(c.resources?.limits, c.resources?.requests, 'requests equal limits')
  t.same(c.securityContext, {
    runAsNonRoot: true,
    runAsUser: 65534,
    runAsGroup: 65534,
    privileged: false,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'], add: ['CHOWN', 'SETUID', 'SETGID'] },
    seccompProfile: { type: 'RuntimeDefault' },
  })
  t.same(c.volumeMounts, [
    { name: 'tmp', mountPath: '/tmp' },
    { name: 'shm', mountPath: '/dev/shm' },
  ])
  t.same(
    ps.volumes,
    [
      { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: '100Mi' } },
      { name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
    ],
    '100Mi in-memory /tmp, 16Mi /dev/shm',
  )

  const bare = sandboxPodManifest(
    { ...specOf('x1'), limits: { ...limits, cpus: 2, memoryMb: 1024, tmpMb: 50 } },
    { ...settings, releaseName: '' },
  )
  t.notOk('app.kubernetes.io/instance' in (bare.metadata?.labels ?? {}), 'no instance label without a release name')
  t.same(bare.spec?.containers[0]?.resources?.limits, { memory: '1024Mi', cpu: '2000m' })
  t.same(bare.spec?.volumes?.[0]?.emptyDir?.sizeLimit, '50Mi')

  t.throws(() => sandboxPodManifest(specOf('Not_A_Name'), settings), /cannot name a pod/)
  t.throws(() => sandboxPodManifest(specOf('a'.repeat(51)), settings), /cannot name a pod/)
})

t.test('the pod settings from the configuration', async (t) => {
  const base = {
    K8S_SANDBOX_IMAGE: '',
    K8S_SANDBOX_SERVICE_ACCOUNT: 'default',
    K8S_RELEASE_NAME: '',
    K8S_SANDBOX_NODE_SELECTOR: '{"pool":"sbx"}',
    K8S_SANDBOX_TOLERATIONS: '[{"key":"k","operator":"Exists"}]',
    K8S_SANDBOX_AFFINITY: '{}',
    K8S_SANDBOX_POD_READY_TIMEOUT: 120,
    FUNCTION_TIMEOUT: 300,
  }
  const s = podSettingsFromConfig(base, { functionImage: 'fn:1' })
  t.same(s, {
    image: 'fn:1',
    serviceAccount: 'default',
    releaseName: '',
    nodeSelector: { pool: 'sbx' },
    tolerations: [{ key: 'k', operator: 'Exists' }],
    affinity: {},
    activeDeadlineSeconds: 480,
  })
  t.equal(podSettingsFromConfig({ ...base, K8S_SANDBOX_IMAGE: 'sbx:2' }, { functionImage: 'fn:1' }).image, 'sbx:2')
  t.throws(
    () => podSettingsFromConfig({ ...base, K8S_SANDBOX_NODE_SELECTOR: '{"a":1}' }),
    /K8S_SANDBOX_NODE_SELECTOR must be an object of strings/,
  )
  t.throws(
    () => podSettingsFromConfig({ ...base, K8S_SANDBOX_TOLERATIONS: '{}' }),
    /K8S_SANDBOX_TOLERATIONS must be an array/,
  )
  t.throws(() => podSettingsFromConfig({ ...base, K8S_SANDBOX_AFFINITY: '{' }), /K8S_SANDBOX_AFFINITY is not JSON/)
})

// ---------------------------------------------------------------------------------------------
// The played Kubernetes API (see the comment at the top).

type Behaviour = 'runs' | 'never-runs' | 'fails-early'

interface FakePod {
  pod: V1Pod
  gets: number
  behaviour: Behaviour
  proc?: ChildProcess
  socket?: WebSocket
  dropped: number
  exitCode?: number | null
  /** Overrides the phase reported (a pod ended by the node while the attach stays open). */
  ended?: { phase: 'Failed'; reason: string }
}

interface Call {
  method: string
  path: string
  query: Record<string, string>
  auth: string | undefined
  body?: unknown
  status?: number
}

const pods = new Map<string, FakePod>()
const calls: Call[] = []
let nextBehaviour: Behaviour = 'runs'
let quotaExhausted = false

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  res.writeHead(code, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }))
}

function podJson(p: FakePod): V1Pod {
  let st: NonNullable<V1Pod['status']>
  if (p.ended !== undefined) {
    st = {
      phase: p.ended.phase,
      reason: p.ended.reason,
      containerStatuses: [
        {
          name: 'runner',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 137, reason: 'Error' } },
        },
      ],
    }
  } else if (p.exitCode !== undefined) {
    st = {
      phase: p.exitCode === 0 ? 'Succeeded' : 'Failed',
      containerStatuses: [
        {
          name: 'runner',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: p.exitCode ?? 137, reason: p.exitCode === 0 ? 'Completed' : 'Error' } },
        },
      ],
    }
  } else if (p.behaviour === 'fails-early' && p.gets > 1) {
    st = {
      phase: 'Failed',
      containerStatuses: [
        {
          name: 'runner',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 1, reason: 'Error' } },
        },
      ],
    }
  } else if (p.behaviour === 'runs' && p.gets > 1) {
    st = {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'runner',
          image: '',
          imageID: '',
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: new Date() } },
        },
      ],
    }
  } else {
    const waiting =
      p.behaviour === 'never-runs' && p.gets > 1
        ? { reason: 'ImagePullBackOff', message: 'Back-off pulling image "registry.local/nope"' }
        : { reason: 'ContainerCreating' }
    st = {
      phase: 'Pending',
      containerStatuses: [
        { name: 'runner', image: '', imageID: '', ready: false, restartCount: 0, state: { waiting } },
      ],
    }
  }
  return { ...p.pod, status: st }
}

/** Like a kubelet: the container starts when the pod runs, whether or not anyone is attached. */
function startContainer(p: FakePod): void {
  const c = p.pod.spec?.containers[0]
  const [exe, ...args] = c?.command ?? []
  if (exe !== 'python3') throw new Error(`unexpected command ${String(exe)}`)
  // Never run the runner's --isolated cleanup here (see the top comment).
  const local = args.map((a) => (a === RUNNER_IN_IMAGE ? RUNNER_SOURCE : a)).filter((a) => a !== '--isolated')
  if (local.includes('--isolated')) throw new Error('refusing to run --isolated outside a sandbox')
  const env: Record<string, string> = { PATH: '/usr/bin:/bin' }
  for (const e of c?.env ?? []) env[e.name] = e.value ?? ''
  env['HOME'] = tmpdir()
  const proc = spawn(PY, local, { stdio: ['pipe', 'pipe', 'pipe'], env, cwd: tmpdir() })
  p.proc = proc
  const forward = (channel: number) => (d: Buffer) => {
    if (p.socket === undefined || p.socket.readyState !== WebSocket.OPEN) p.dropped += d.length
    else p.socket.send(Buffer.concat([Buffer.from([channel]), d]))
  }
  proc.stdout?.on('data', forward(1))
  proc.stderr?.on('data', forward(2))
  proc.stdin?.on('error', () => undefined)
  proc.on('exit', (code) => {
    p.exitCode = code
    if (p.socket !== undefined && p.socket.readyState === WebSocket.OPEN) {
      p.socket.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify({ metadata: {}, status: 'Success' }))]))
      p.socket.close(1000)
    }
  })
}

const wss = new WebSocket.WebSocketServer({
  noServer: true,
  handleProtocols: (offered: Set<string>) => (offered.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : false),
})

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const url = new URL(req.url ?? '/', 'http://fake')
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const call: Call = {
      method: req.method ?? '',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      auth: req.headers.authorization,
    }
    if (chunks.length > 0) call.body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    calls.push(call)
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/.exec(url.pathname)
    const reply = (code: number, body: unknown) => {
      call.status = code
      res.writeHead(code, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (m === null) return status(res, 404, 'NotFound', `no route ${url.pathname}`)
    const [, ns, name] = m
    if (req.method === 'POST' && name === undefined) {
      const pod = call.body as V1Pod
      const podName = pod.metadata?.name ?? ''
      if (quotaExhausted) {
        call.status = 403
        return status(
          res,
          403,
          'Forbidden',
          `pods "${podName}" is forbidden: exceeded quota: sandbox-quota, requested: pods=1, used: pods=4, limited: pods=4`,
        )
      }
      if (pods.has(podName)) return status(res, 409, 'AlreadyExists', `pods "${podName}" already exists`)
      const p: FakePod = {
        pod: { ...pod, metadata: { ...pod.metadata, namespace: ns, uid: `uid-${podName}` } },
        gets: 0,
        behaviour: nextBehaviour,
        dropped: 0,
      }
      pods.set(podName, p)
      return reply(201, podJson(p))
    }
    const p = name === undefined ? undefined : pods.get(name)
    if (p === undefined) {
      call.status = 404
      return status(res, 404, 'NotFound', `pods "${String(name)}" not found`)
    }
    if (req.method === 'GET') {
      p.gets++
      const json = podJson(p)
      if (json.status?.phase === 'Running' && p.proc === undefined) startContainer(p)
      return reply(200, json)
    }
    if (req.method === 'DELETE') {
      pods.delete(name as string)
      p.proc?.kill('SIGKILL')
      p.socket?.terminate()
      return reply(200, podJson(p))
    }
    return status(res, 405, 'MethodNotAllowed', req.method ?? '')
  })
})

const upgrades: Call[] = []
server.on('upgrade', (req: IncomingMessage, sock: Duplex, head: Buffer) => {
  const url = new URL(req.url ?? '/', 'http://fake')
  upgrades.push({
    method: 'UPGRADE',
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    auth: req.headers.authorization,
  })
  const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/attach$/.exec(url.pathname)
  const p = m === null ? undefined : pods.get(m[2] ?? '')
  if (p === undefined || p.proc === undefined) {
    sock.end('HTTP/1.1 404 Not Found\r\n\r\n')
    return
  }
  wss.handleUpgrade(req, sock, head, (ws: WebSocket) => {
    p.socket = ws
    ws.on('message', (data: Buffer) => {
      if (data[0] === 0) p.proc?.stdin?.write(data.subarray(1))
      else if (data[0] === 255 && data[1] === 0) p.proc?.stdin?.end()
    })
    // stdinOnce: the container's stdin closes when the attach goes away.
    ws.on('close', () => p.proc?.stdin?.end())
  })
})

await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
const port = (server.address() as AddressInfo).port
t.teardown(async () => {
  for (const p of pods.values()) p.proc?.kill('SIGKILL')
  for (const c of wss.clients) c.terminate()
  await new Promise<void>((r) => server.close(() => r()))
})

function fakeKubeConfig(namespace?: string): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: `http://127.0.0.1:${String(port)}`, skipTLSVerify: true }],
    users: [{ name: 'platform', token: TOKEN }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'platform', ...(namespace === undefined ? {} : { namespace }) }],
    currentContext: 'fake',
  })
  return kc
}

const tmp = mkdtempSync(join(tmpdir(), 'k8s-test-'))
t.teardown(() => rmSync(tmp, { recursive: true, force: true }))
const nsFile = join(tmp, 'namespace')
writeFileSync(nsFile, 'platform-own\n')

const driverOptions = (extra: Partial<K8sPodDriverOptions> = {}): K8sPodDriverOptions => ({
  ...settings,
  kubeConfig: fakeKubeConfig('from-context'),
  namespace: '',
  namespaceFile: nsFile,
  podReadyTimeoutMs: 10_000,
  readyPollMs: 20,
  ...extra,
})

const since = (n: number) =>
  calls.slice(n).map((c) => `${c.method} ${c.path}${c.status === undefined ? '' : ` ${String(c.status)}`}`)

t.test(
  '(b) start creates the pod, waits until Running, attaches; the runner answers; destroy deletes it',
  async (t) => {
    nextBehaviour = 'runs'
    const driver = k8sPodDriver(driverOptions())
    t.same(await driver.check(), { ok: true })
    const n = calls.length
    const sb = await driver.start(specOf('happy-1'))
    const base = '/api/v1/namespaces/platform-own/pods'
    t.same(
      since(n),
      [`POST ${base} 201`, `GET ${base}/platform-sbx-happy-1 200`, `GET ${base}/platform-sbx-happy-1 200`],
      'create, Pending, Running',
    )
    t.ok(
      calls.slice(n).every((c) => c.auth === `Bearer ${TOKEN}`),
      'every call carries the bearer token',
    )
    t.same(
      calls[n]?.body,
      sandboxPodManifest(specOf('happy-1'), { ...settings, namespace: 'platform-own' }),
      'the body is the manifest, in the own namespace',
    )
    const up = upgrades.at(-1)
    t.equal(up?.path, `${base}/platform-sbx-happy-1/attach`)
    t.same(up?.query, { container: 'runner', stderr: 'true', stdin: 'true', stdout: 'true', tty: 'false' })
    t.equal(up?.auth, `Bearer ${TOKEN}`)
    t.equal(sb.name, 'platform-sbx-happy-1')

    const ch = openChannel(sb, 10_000)
    const ready = await ch.ready
    t.equal(ready['mode'], 'exclusive', 'the ready frame came through the attach')
    const out = await ch.exec({
      code: 'def handler(i, c):\n    print("hi")\n    return {"twice": i["x"] * 2}\n',
      entrypoint: 'handler',
      input: { x: 21 },
      context: {},
      timeoutMs: 5_000,
    })
    t.match(out, { ok: true, result: { twice: 42 }, output: 'hi\n' })
    const again = await ch.exec({
      code: 'def handler(i, c):\n    return i\n',
      entrypoint: 'handler',
      input: [1, 'two'],
      context: {},
      timeoutMs: 5_000,
    })
    t.match(again, { ok: true, result: [1, 'two'] })
    t.equal(
      pods.get('platform-sbx-happy-1')?.dropped,
      0,
      'nothing was written before the attach (the start gate held the runner)',
    )

    const d = calls.length
    await sb.destroy()
    await sb.destroy()
    t.same(since(d), [`DELETE ${base}/platform-sbx-happy-1 200`], 'one delete, idempotent')
    t.equal(calls[d]?.query['gracePeriodSeconds'], '0')
    t.same(await sb.exited, { code: null, signal: 'deleted' })
    t.equal(ch.broken, true)
  },
)

t.test('(b) exhausted namespace quota: the start fails with a quota error', async (t) => {
  quotaExhausted = true
  t.teardown(() => {
    quotaExhausted = false
  })
  const driver = k8sPodDriver(driverOptions({ namespace: 'sandboxes' }))
  const n = calls.length
  const err = await driver.start(specOf('quota-1')).then(
    () => null,
    (e: unknown) => e,
  )
  t.ok(err instanceof SandboxQuotaError)
  t.match((err as Error).message, /quota exceeded in namespace sandboxes: .*exceeded quota: sandbox-quota/)
  t.same(since(n), ['POST /api/v1/namespaces/sandboxes/pods 403'], 'nothing after the refused create')
})

t.test('(b) a pod that never runs fails after the ready timeout, with its last state, and is deleted', async (t) => {
  nextBehaviour = 'never-runs'
  const driver = k8sPodDriver(driverOptions({ namespace: 'sandboxes', podReadyTimeoutMs: 400 }))
  const n = calls.length
  const started = Date.now()
  const err = await driver.start(specOf('slow-1')).then(
    () => null,
    (e: unknown) => e,
  )
  t.ok(err instanceof SandboxStartError)
  t.match(
    (err as Error).message,
    /platform-sbx-slow-1 was not running after 0\.4 s \(K8S_SANDBOX_POD_READY_TIMEOUT\); last state: Pending \(ImagePullBackOff: Back-off pulling image/,
  )
  t.ok(Date.now() - started >= 400)
  const seen = since(n)
  t.equal(seen[0], 'POST /api/v1/namespaces/sandboxes/pods 201')
  t.ok(
    seen.slice(1, -1).every((c) => c === 'GET /api/v1/namespaces/sandboxes/pods/platform-sbx-slow-1 200'),
    'polled with GET',
  )
  t.equal(seen.at(-1), 'DELETE /api/v1/namespaces/sandboxes/pods/platform-sbx-slow-1 200', 'the pod is deleted')
  t.notOk(pods.has('platform-sbx-slow-1'))
})

t.test('(b) a pod that ends before it runs fails the start', async (t) => {
  nextBehaviour = 'fails-early'
  const driver = k8sPodDriver(driverOptions({ namespace: 'sandboxes' }))
  await t.rejects(driver.start(specOf('early-1')), /platform-sbx-early-1 ended before it ran \(Failed, exit code 1\)/)
  t.notOk(pods.has('platform-sbx-early-1'), 'deleted')
})

t.test('(b) other API errors name the status; a vanished pod is a 404 that destroy ignores', async (t) => {
  nextBehaviour = 'runs'
  const driver = k8sPodDriver(driverOptions({ namespace: 'sandboxes' }))
  const first = await driver.start(specOf('dup-1'))
  // the same id twice: the API server answers 409
  await t.rejects(
    driver.start(specOf('dup-1')),
    /creating sandbox pod sandboxes\/platform-sbx-dup-1 failed \(HTTP 409\): pods "platform-sbx-dup-1" already exists/,
  )
  // the pod vanishes behind the driver's back (deleted by an operator)
  const p = pods.get('platform-sbx-dup-1')
  pods.delete('platform-sbx-dup-1')
  p?.proc?.kill('SIGKILL')
  const n = calls.length
  await first.destroy()
  t.same(
    since(n).filter((c) => c.startsWith('DELETE')),
    ['DELETE /api/v1/namespaces/sandboxes/pods/platform-sbx-dup-1 404'],
  )
  t.notMatch((first as unknown as { stderr: string }).stderr, /failed/, 'the 404 is not an error')
  await first.exited
})

t.test('(b) exited resolves when the runner ends, with the exit code from the pod status', async (t) => {
  nextBehaviour = 'runs'
  const driver = k8sPodDriver(driverOptions({ namespace: 'sandboxes' }))
  const sb = await driver.start(specOf('exit-1'))
  const ch = openChannel(sb, 10_000)
  await ch.ready
  // the runner's own `exit` op, written as a raw frame
  const body = Buffer.from(JSON.stringify({ op: 'exit', id: 'x' }))
  const head = Buffer.alloc(4)
  head.writeUInt32BE(body.length)
  sb.stdin.write(Buffer.concat([head, body]))
  t.same(await sb.exited, { code: 0, signal: null })
  await sb.destroy()
})

t.test('(b) exited resolves when the pod ends while the attach stays open (status poll)', async (t) => {
  nextBehaviour = 'runs'
  const driver = k8sPodDriver(driverOptions({ namespace: 'sandboxes', statusPollMs: 50 }))
  const sb = await driver.start(specOf('deadline-1'))
  await openChannel(sb, 10_000).ready
  const p = pods.get('platform-sbx-deadline-1')
  if (p === undefined) throw new Error('pod missing')
  p.ended = { phase: 'Failed', reason: 'DeadlineExceeded' }
  t.same(await sb.exited, { code: 137, signal: 'DeadlineExceeded' })
  await eventually(async () => (p.socket?.readyState === WebSocket.CLOSED ? true : undefined), 'the attach to close')
  await sb.destroy()
})

t.test('check() and the kube config / namespace resolution', async (t) => {
  const none = loadKubeConfig({}, tmp)
  t.notOk(none instanceof KubeConfig)
  t.match(
    (none as { reason: string }).reason,
    /no Kubernetes configuration: not running in a pod .* and no kubeconfig \(.*\.kube\/config\)/,
  )

  const missing = k8sPodDriver({ ...driverOptions(), kubeConfig: undefined })
  // this machine runs no cluster: without a kubeconfig in $HOME the driver says why
  if (
    !existsSync(join(process.env['HOME'] ?? '/nonexistent', '.kube', 'config')) &&
    (process.env['KUBECONFIG'] ?? '') === '' &&
    (process.env['KUBERNETES_SERVICE_HOST'] ?? '') === ''
  ) {
    t.match(await missing.check(), { ok: false, reason: /no Kubernetes configuration/ })
  }

  const file = join(tmp, 'kubeconfig.yaml')
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://k8s.example:6443\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: ctx-ns\ncurrent-context: x\n`,
  )
  const kc = loadKubeConfig({ KUBECONFIG: file }, tmp)
  if (!(kc instanceof KubeConfig)) throw new Error((kc as { reason: string }).reason)
  t.equal(kc.getCurrentCluster()?.server, 'https://k8s.example:6443')
  t.equal(resolveNamespace('explicit', kc, nsFile), 'explicit', 'K8S_SANDBOX_NAMESPACE wins')
  t.equal(resolveNamespace('', kc, nsFile), 'platform-own', 'then the service account namespace file')
  t.equal(resolveNamespace('', kc, join(tmp, 'absent')), 'ctx-ns', 'then the kubeconfig context')
  t.equal(resolveNamespace('', fakeKubeConfig(), join(tmp, 'absent')), 'default')

  t.match(await k8sPodDriver(driverOptions({ image: '' })).check(), { ok: false, reason: /no sandbox image/ })
})
