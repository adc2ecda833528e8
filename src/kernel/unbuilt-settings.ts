import { ConfigSchema, type Config } from './config.ts'
import type { Logger } from './log.ts'

/*
 * Settings the schema accepts (a deployment may already set them) whose feature this version does
 * not have. Nothing reads them; so that setting one is not silently a no-op, the platform logs one
 * warning per such setting given a value other than its default, at start. When a feature is
 * built, its settings leave this list (tests/kernel/config-read.test.ts keeps the two in step).
 */
export const UNBUILT_SETTINGS: Readonly<Partial<Record<keyof Config, string>>> = {
  APP_CPU_LIMIT:
    'a process does not size or replicate itself: set resources and replicas per role in the Helm chart values (deploy/helm)',
  APP_MEMORY_LIMIT:
    'a process does not size or replicate itself: set resources and replicas per role in the Helm chart values (deploy/helm)',
  APP_CPU_RESERVATION:
    'a process does not size or replicate itself: set resources and replicas per role in the Helm chart values (deploy/helm)',
  APP_MEMORY_RESERVATION:
    'a process does not size or replicate itself: set resources and replicas per role in the Helm chart values (deploy/helm)',
  BACKEND_REPLICAS:
    'a process does not size or replicate itself: set resources and replicas per role in the Helm chart values (deploy/helm)',
  UVICORN_WORKERS: 'it is ignored: the gateway is one thread per process (run more processes with ROLES=gateway)',
}

/** One sentence per unbuilt setting given a non-default value: "APP_CPU_LIMIT is set but …". */
export function unbuiltSettingsInUse(config: Config): string[] {
  const out: string[] = []
  for (const [key, why] of Object.entries(UNBUILT_SETTINGS)) {
    const def = (ConfigSchema.properties[key as keyof Config] as { default?: unknown }).default
    if (config[key as keyof Config] !== def) out.push(`${key} is set but ${why}`)
  }
  return out
}

export function warnUnbuiltSettings(config: Config, log: Logger): void {
  for (const message of unbuiltSettingsInUse(config)) log.warn(message)
}
