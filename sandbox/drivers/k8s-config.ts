import type { Config } from '../../src/kernel/config.ts'
import type { SandboxDriver } from '../driver.ts'
import { k8sPodDriver } from './k8s.ts'
import { podSettingsFromConfig } from './k8s-pod-spec.ts'

/* SANDBOX_EXECUTOR=k8s_pod: the pod driver configured from the K8S_* settings. */
export function k8sDriverFromConfig(config: Config): SandboxDriver {
  return k8sPodDriver({
    ...podSettingsFromConfig(config, {
      functionImage: (config as unknown as Record<string, string>)['SANDBOX_IMAGE'] || 'platform-sandbox:latest',
    }),
    namespace: config.K8S_SANDBOX_NAMESPACE,
    podReadyTimeoutMs: config.K8S_SANDBOX_POD_READY_TIMEOUT * 1000,
  })
}
