import type { V1Affinity, V1Pod, V1Toleration } from '@kubernetes/client-node'
import type { Config } from '../../src/kernel/config.ts'
import { shmMbOf, type SandboxSpec } from '../driver.ts'
import { runnerArgs } from '../runner-path.ts'

/*
 * The manifest of one sandbox pod, as a pure function so every property can be
 * asserted without a cluster. One pod per SandboxSpec, single-use, deleted by the driver after the
 * execution; `activeDeadlineSeconds` is the backstop when the platform dies before deleting it.
 *
 * The container runs the runner (`python3 -I -S -B /runner/runner.py` + runnerArgs) behind a
 * one-line start gate: a Kubernetes attach does not replay what a container wrote before the attach
 * was established, and the runner writes its `ready` frame at once. The gate (python3 -c) waits
 * for one newline byte on stdin, which the driver sends once its attach is open, then exec()s the
 * runner with the same interpreter: the runner keeps pid 1 and its stdin/stdout, and nothing it
 * writes can be lost. The image must hold the runner at /runner/runner.py.
 */

export const SANDBOX_CONTAINER = 'runner'
export const RUNNER_IN_IMAGE = '/runner/runner.py'

/** Waits for the driver's "\n" on stdin (EOF or anything else: exit 3), then becomes the runner. */
export const START_GATE =
  'import os,sys\nif os.read(0,1)!=b"\\n": sys.exit(3)\nos.execv(sys.executable,[sys.executable,"-I","-S","-B"]+sys.argv[1:])'

export interface SandboxPodSettings {
  namespace: string
  image: string
  serviceAccount: string
  /** Sets app.kubernetes.io/instance when not empty (K8S_RELEASE_NAME). */
  releaseName: string
  /** K8S_SANDBOX_NODE_SELECTOR, K8S_SANDBOX_TOLERATIONS, K8S_SANDBOX_AFFINITY: applied verbatim. */
  nodeSelector: Record<string, string>
  tolerations: V1Toleration[]
  affinity: V1Affinity
  activeDeadlineSeconds: number
}

const POD_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

/** `platform-sbx-<id>`: a DNS label (<= 63), so the id is also a valid label value. */
export function sandboxPodName(id: string): string {
  const name = `platform-sbx-${id}`
  if (name.length > 63 || !POD_NAME.test(name))
    throw new Error(
      `sandbox id ${JSON.stringify(id)} cannot name a pod: lowercase letters, digits and '-', at most 50 characters`,
    )
  return name
}

/** CPU cores as a Kubernetes quantity in millicores (0.5 -> "500m"). */
export function cpuQuantity(cpus: number): string {
  return `${String(Math.max(1, Math.round(cpus * 1000)))}m`
}

export function sandboxPodManifest(spec: SandboxSpec, s: SandboxPodSettings): V1Pod {
  const name = sandboxPodName(spec.id)
  const labels: Record<string, string> = {
    'app.kubernetes.io/name': 'platform-sandbox',
    'app.kubernetes.io/component': 'sandbox',
    ...(s.releaseName === '' ? {} : { 'app.kubernetes.io/instance': s.releaseName }),
    'platform.sandbox.id': spec.id,
  }
  const resources = { memory: `${String(spec.limits.memoryMb)}Mi`, cpu: cpuQuantity(spec.limits.cpus) }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: s.namespace, labels },
    spec: {
      restartPolicy: 'Never',
      activeDeadlineSeconds: s.activeDeadlineSeconds,
      serviceAccountName: s.serviceAccount,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      shareProcessNamespace: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65534,
        runAsGroup: 65534,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      nodeSelector: structuredClone(s.nodeSelector),
      tolerations: structuredClone(s.tolerations),
      affinity: structuredClone(s.affinity),
      containers: [
        {
          name: SANDBOX_CONTAINER,
          image: s.image,
          command: [
            'python3',
            '-I',
            '-S',
            '-B',
            '-c',
            START_GATE,
            RUNNER_IN_IMAGE,
            ...runnerArgs(spec, { isolated: true }),
          ],
          workingDir: '/tmp',
          env: [
            { name: 'HOME', value: '/tmp' },
            { name: 'LANG', value: 'C.UTF-8' },
            { name: 'PYTHONDONTWRITEBYTECODE', value: '1' },
          ],
          stdin: true,
          stdinOnce: true,
          tty: false,
          resources: { requests: { ...resources }, limits: { ...resources } },
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65534,
            runAsGroup: 65534,
            privileged: false,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'], add: ['CHOWN', 'SETUID', 'SETGID'] },
            seccompProfile: { type: 'RuntimeDefault' },
          },
          // /dev/shm as a sized in-memory volume: the runtime's own is 64 MB whatever the limits
          volumeMounts: [
            { name: 'tmp', mountPath: '/tmp' },
            { name: 'shm', mountPath: '/dev/shm' },
          ],
        },
      ],
      volumes: [
        { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: `${String(spec.limits.tmpMb)}Mi` } },
        { name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: `${String(shmMbOf(spec.limits))}Mi` } },
      ],
    },
  }
}

function parseJsonSetting<T>(name: string, text: string, valid: (v: unknown) => boolean, expected: string): T {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    throw new Error(`${name} is not JSON`)
  }
  if (!valid(v)) throw new Error(`${name} must be ${expected}`)
  return v as T
}

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * The pod settings from the configuration. `image` is K8S_SANDBOX_IMAGE or, when empty, the
 * function image the caller passes; the deadline backstop covers the ready timeout, the function
 * timeout and a minute of margin.
 */
export function podSettingsFromConfig(
  c: Pick<
    Config,
    | 'K8S_SANDBOX_IMAGE'
    | 'K8S_SANDBOX_SERVICE_ACCOUNT'
    | 'K8S_RELEASE_NAME'
    | 'K8S_SANDBOX_NODE_SELECTOR'
    | 'K8S_SANDBOX_TOLERATIONS'
    | 'K8S_SANDBOX_AFFINITY'
    | 'K8S_SANDBOX_POD_READY_TIMEOUT'
    | 'FUNCTION_TIMEOUT'
  >,
  o: { functionImage?: string } = {},
): Omit<SandboxPodSettings, 'namespace'> {
  return {
    image: c.K8S_SANDBOX_IMAGE === '' ? (o.functionImage ?? '') : c.K8S_SANDBOX_IMAGE,
    serviceAccount: c.K8S_SANDBOX_SERVICE_ACCOUNT,
    releaseName: c.K8S_RELEASE_NAME,
    nodeSelector: parseJsonSetting(
      'K8S_SANDBOX_NODE_SELECTOR',
      c.K8S_SANDBOX_NODE_SELECTOR,
      (v) => isObject(v) && Object.values(v as object).every((x) => typeof x === 'string'),
      'an object of strings',
    ),
    tolerations: parseJsonSetting(
      'K8S_SANDBOX_TOLERATIONS',
      c.K8S_SANDBOX_TOLERATIONS,
      (v) => Array.isArray(v) && v.every(isObject),
      'an array of objects',
    ),
    affinity: parseJsonSetting('K8S_SANDBOX_AFFINITY', c.K8S_SANDBOX_AFFINITY, isObject, 'an object'),
    activeDeadlineSeconds: c.K8S_SANDBOX_POD_READY_TIMEOUT + c.FUNCTION_TIMEOUT + 60,
  }
}
