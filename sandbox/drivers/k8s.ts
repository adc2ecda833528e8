import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, Writable } from 'node:stream'
import { ApiException, Attach, CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node'
// Not re-exported by the package index (1.4.0, no "exports" map): needed to give the websocket
// handler our own streams. The default handler would act on process.stdin/stdout when the server
// sends a v5 close-stream frame.
import { WebSocketHandler } from '@kubernetes/client-node/dist/web-socket-handler.js'
import type { SandboxDriver, SandboxExit, SandboxProcess, SandboxSpec } from '../driver.ts'
import { SANDBOX_CONTAINER, sandboxPodManifest, sandboxPodName, type SandboxPodSettings } from './k8s-pod-spec.ts'

/*
 * SANDBOX_EXECUTOR=k8s_pod: one single-use pod per SandboxSpec. start() creates the
 * pod (manifest: k8s-pod-spec.ts), polls it until its container runs, attaches to the container's
 * stdin/stdout over the API server's websocket (`pods/attach`, tty off) and sends the start gate's
 * newline; from then on stdin/stdout carry the runner protocol. destroy() deletes the pod with
 * grace 0. `exited` resolves when the attach closes or the pod is seen ended (a slow status poll
 * covers an attach that stays open on a lost node).
 *
 * RBAC the platform's service account needs in the sandbox namespace: pods create/get/delete and
 * pods/attach create+get. Exhausted ResourceQuota makes the API server refuse the create with 403
 * "exceeded quota": start() then throws SandboxQuotaError (the execution fails with a
 * quota error).
 */

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'

/** The namespace's ResourceQuota refused the sandbox pod. */
export class SandboxQuotaError extends Error {
  override readonly name = 'SandboxQuotaError'
}

/** The sandbox pod could not be created, did not start in time, or ended before it ran. */
export class SandboxStartError extends Error {
  override readonly name = 'SandboxStartError'
}

export interface K8sPodDriverOptions extends Omit<SandboxPodSettings, 'namespace'> {
  /** Defaults to the in-cluster configuration, else the default kubeconfig. */
  kubeConfig?: KubeConfig | undefined
  /** K8S_SANDBOX_NAMESPACE; empty: the platform pod's own namespace. */
  namespace: string
  /** K8S_SANDBOX_POD_READY_TIMEOUT in ms. */
  podReadyTimeoutMs: number
  /** Poll interval while waiting for the pod to run (default 500 ms). */
  readyPollMs?: number
  /** Poll interval of a running sandbox's pod status (default 10 s). */
  statusPollMs?: number
  /** Where the own namespace is read from (default the service account mount). */
  namespaceFile?: string
}

/**
 * In-cluster configuration when the platform runs in a pod, else the kubeconfig (KUBECONFIG or
 * ~/.kube/config). These are the client's standard variables, not platform settings. Returns a
 * reason instead of the client's silent fallback to http://localhost:8080.
 */
export function loadKubeConfig(
  env: Record<string, string | undefined> = process.env,
  home: string = homedir(),
): KubeConfig | { reason: string } {
  const kc = new KubeConfig()
  try {
    if ((env['KUBERNETES_SERVICE_HOST'] ?? '') !== '' && existsSync(join(SERVICE_ACCOUNT_DIR, 'token'))) {
      kc.loadFromCluster()
      return kc
    }
    const files = (env['KUBECONFIG'] ?? '').split(':').filter((f) => f !== '')
    const file = files[0] ?? join(home, '.kube', 'config')
    if (!existsSync(file))
      return {
        reason: `no Kubernetes configuration: not running in a pod (KUBERNETES_SERVICE_HOST and ${SERVICE_ACCOUNT_DIR}/token) and no kubeconfig (${file})`,
      }
    kc.loadFromFile(file)
  } catch (err) {
    return { reason: `cannot load the Kubernetes configuration: ${(err as Error).message}` }
  }
  if (kc.getCurrentCluster() === null) return { reason: 'the kubeconfig has no current context with a cluster' }
  return kc
}

/** K8S_SANDBOX_NAMESPACE, else the platform pod's own namespace, else the kubeconfig context's, else "default". */
export function resolveNamespace(
  configured: string,
  kc: KubeConfig,
  file: string = join(SERVICE_ACCOUNT_DIR, 'namespace'),
): string {
  if (configured !== '') return configured
  try {
    const own = readFileSync(file, 'utf8').trim()
    if (own !== '') return own
  } catch {
    // not in a pod
  }
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default'
}

interface ApiStatus {
  message?: string
  reason?: string
}

function apiStatus(err: unknown): { code: number | null; message: string } {
  if (err instanceof ApiException) {
    const e = err as ApiException<unknown>
    let body: unknown = e.body
    if (typeof body === 'string') {
      try {
        body = JSON.parse(body)
      } catch {
        // plain text body
      }
    }
    const msg =
      typeof body === 'object' && body !== null
        ? ((body as ApiStatus).message ?? JSON.stringify(body))
        : String(body ?? '')
    return { code: e.code, message: msg === '' ? `HTTP ${String(e.code)}` : msg }
  }
  return { code: null, message: (err as Error).message }
}

/** What the pod is waiting for, for error messages ("Unschedulable: 0/3 nodes ...", "ImagePullBackOff: ..."). */
function podWaitReason(pod: V1Pod): string {
  const st = pod.status
  const waiting = st?.containerStatuses?.[0]?.state?.waiting
  if (waiting?.reason !== undefined)
    return `${waiting.reason}${waiting.message === undefined ? '' : `: ${waiting.message}`}`
  const unscheduled = st?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')
  if (unscheduled !== undefined)
    return `${unscheduled.reason ?? 'not scheduled'}${unscheduled.message === undefined ? '' : `: ${unscheduled.message}`}`
  return st?.reason ?? st?.message ?? 'no status yet'
}

function podExit(pod: V1Pod): SandboxExit {
  const t = pod.status?.containerStatuses?.[0]?.state?.terminated
  const reason = pod.status?.reason ?? (t?.reason === 'Completed' || t?.reason === 'Error' ? undefined : t?.reason)
  return { code: t?.exitCode ?? null, signal: t?.signal === undefined ? (reason ?? null) : String(t.signal) }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** The websocket the client's Attach returns (ws.WebSocket; the package's own types are not installed). */
interface AttachSocket {
  readonly readyState: number
  on(event: 'close', listener: () => void): void
  close(): void
  terminate(): void
}

export function k8sPodDriver(o: K8sPodDriverOptions): SandboxDriver {
  let kc: KubeConfig | undefined = o.kubeConfig
  let core: CoreV1Api | undefined
  let namespace: string | undefined
  const readyPollMs = o.readyPollMs ?? 500
  const statusPollMs = o.statusPollMs ?? 10_000

  function client(): { kc: KubeConfig; core: CoreV1Api; namespace: string } {
    if (kc === undefined) {
      const loaded = loadKubeConfig()
      if (!(loaded instanceof KubeConfig)) throw new SandboxStartError(loaded.reason)
      kc = loaded
    }
    core ??= kc.makeApiClient(CoreV1Api)
    namespace ??= resolveNamespace(o.namespace, kc, o.namespaceFile)
    return { kc, core, namespace }
  }

  async function deletePod(api: CoreV1Api, ns: string, name: string): Promise<void> {
    try {
      await api.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 0 })
    } catch (err) {
      if (apiStatus(err).code !== 404) throw err
    }
  }

  async function waitRunning(api: CoreV1Api, ns: string, name: string): Promise<void> {
    const deadline = Date.now() + o.podReadyTimeoutMs
    let last = 'no status yet'
    for (;;) {
      const left = deadline - Date.now()
      if (left <= 0)
        throw new SandboxStartError(
          `sandbox pod ${ns}/${name} was not running after ${String(o.podReadyTimeoutMs / 1000)} s (K8S_SANDBOX_POD_READY_TIMEOUT); last state: ${last}`,
        )
      let pod: V1Pod | 'timeout'
      let timer: NodeJS.Timeout | undefined
      try {
        pod = await Promise.race([
          api.readNamespacedPod({ name, namespace: ns }),
          new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), left))),
        ])
      } catch (err) {
        const s = apiStatus(err)
        if (s.code === 404) throw new SandboxStartError(`sandbox pod ${ns}/${name} was deleted before it ran`)
        throw new SandboxStartError(`reading sandbox pod ${ns}/${name} failed: ${s.message}`)
      } finally {
        clearTimeout(timer)
      }
      if (pod === 'timeout') continue
      const phase = pod.status?.phase
      if (phase === 'Running' && pod.status?.containerStatuses?.[0]?.state?.running !== undefined) return
      if (phase === 'Succeeded' || phase === 'Failed') {
        const e = podExit(pod)
        throw new SandboxStartError(
          `sandbox pod ${ns}/${name} ended before it ran (${phase}, exit code ${String(e.code)}${e.signal === null ? '' : `, ${e.signal}`})`,
        )
      }
      last = `${phase ?? 'Unknown'} (${podWaitReason(pod)})`
      await sleep(Math.min(readyPollMs, Math.max(0, deadline - Date.now())))
    }
  }

  return {
    name: 'k8s_pod',
    async check() {
      let c: ReturnType<typeof client>
      try {
        c = client()
      } catch (err) {
        return { ok: false, reason: (err as Error).message }
      }
      if (o.image === '')
        return { ok: false, reason: 'no sandbox image: set K8S_SANDBOX_IMAGE (or the function image)' }
      if (c.kc.getCurrentCluster() === null)
        return { ok: false, reason: 'the Kubernetes configuration has no current cluster' }
      return { ok: true }
    },

    async start(spec: SandboxSpec): Promise<SandboxProcess> {
      const { kc: config, core: api, namespace: ns } = client()
      const name = sandboxPodName(spec.id)
      const manifest = sandboxPodManifest(spec, { ...o, namespace: ns })
      try {
        await api.createNamespacedPod({ namespace: ns, body: manifest })
      } catch (err) {
        const s = apiStatus(err)
        if (s.code === 403 && /exceeded quota/i.test(s.message))
          throw new SandboxQuotaError(`sandbox pod quota exceeded in namespace ${ns}: ${s.message}`)
        throw new SandboxStartError(
          `creating sandbox pod ${ns}/${name} failed${s.code === null ? '' : ` (HTTP ${String(s.code)})`}: ${s.message}`,
        )
      }

      const stdin = new PassThrough()
      const stdout = new PassThrough()
      let stderr = ''
      const stderrSink = new Writable({
        write(chunk: Buffer, _enc, cb) {
          if (stderr.length < 4096) stderr += chunk.toString('utf8')
          cb()
        },
      })
      let ws: AttachSocket
      try {
        await waitRunning(api, ns, name)
        const handler = new WebSocketHandler(config, undefined, { stdin, stdout, stderr: stderrSink })
        const attach = new Attach(config, {
          connect: (path, text, binary) =>
            handler.connect(path, text, (stream, buff) => {
              // stdout and stderr go through the client's handler; the status channel (3) and
              // anything unknown are not passed on: its JSON.parse must not throw in a socket callback.
              if (stream === WebSocketHandler.StdoutStream || stream === WebSocketHandler.StderrStream)
                return binary === null ? true : binary(stream, buff)
              if (stream === WebSocketHandler.StatusStream) stdout.end()
              return true
            }),
        })
        ws = (await attach.attach(
          ns,
          name,
          SANDBOX_CONTAINER,
          stdout,
          stderrSink,
          stdin,
          false,
        )) as unknown as AttachSocket
      } catch (err) {
        await deletePod(api, ns, name).catch(() => undefined)
        if (err instanceof SandboxStartError) throw err
        throw new SandboxStartError(`attaching to sandbox pod ${ns}/${name} failed: ${apiStatus(err).message}`)
      }

      let resolveExit!: (e: SandboxExit) => void
      const exited = new Promise<SandboxExit>((r) => (resolveExit = r))
      let ended = false
      let destroying: Promise<void> | null = null
      let poll: NodeJS.Timeout | undefined
      const finish = (e: SandboxExit): void => {
        if (ended) return
        ended = true
        clearInterval(poll)
        // stdin stays open: late writes go to a closed socket, which ws drops without throwing
        stdout.end()
        if (ws.readyState <= 1) ws.terminate()
        resolveExit(e)
      }
      ws.on('close', () => {
        if (ended) return
        if (destroying !== null) return finish({ code: null, signal: 'deleted' })
        // The attach ends with the container: the pod's status says how it ended (best effort).
        // A status the kubelet has not updated yet says nothing: then only "attach closed".
        const endedAs = (pod: V1Pod): SandboxExit | null =>
          pod.status?.phase === 'Succeeded' ||
          pod.status?.phase === 'Failed' ||
          pod.status?.containerStatuses?.[0]?.state?.terminated !== undefined
            ? podExit(pod)
            : null
        void Promise.race([api.readNamespacedPod({ name, namespace: ns }).then(endedAs), sleep(2_000).then(() => null)])
          .catch(() => null)
          .then((e) => finish(e ?? { code: null, signal: 'attach closed' }))
      })
      const checkPod = async (): Promise<void> => {
        try {
          const pod = await api.readNamespacedPod({ name, namespace: ns })
          if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') finish(podExit(pod))
        } catch (err) {
          if (apiStatus(err).code === 404) finish({ code: null, signal: 'pod deleted' })
        }
      }
      poll = setInterval(() => void checkPod(), statusPollMs)
      poll.unref()

      // Open the start gate: the runner starts now and its ready frame comes through the attach.
      stdin.write('\n')

      return {
        id: spec.id,
        name,
        stdin,
        stdout,
        exited,
        get stderr() {
          return stderr
        },
        destroy() {
          // Never rejects (callers may not await it); a pod that cannot be deleted ends at its
          // activeDeadlineSeconds, and the failure is kept in `stderr`.
          destroying ??= deletePod(api, ns, name)
            .catch((err: unknown) => {
              stderr += `\n[platform] deleting sandbox pod ${ns}/${name} failed: ${apiStatus(err).message}`
            })
            .finally(() => finish({ code: null, signal: 'deleted' }))
          return destroying
        },
      } as SandboxProcess
    },

    async close() {},
  }
}
