/*
 * Which JetStream features the connected nats-server has, read from its version (the INFO the
 * server sends on connect). A 2.9 server accepts several newer options and silently ignores them
 * (a per-message TTL header, a KV per-key TTL), so code that relies on one asks here first and
 * takes its older path instead. docs/nats-server.md has the table for people.
 */

/** The oldest nats-server the platform runs on (JetStream as 2.9 has it). */
export const MIN_NATS_SERVER = '2.9.0'

/** The release that brought each feature. */
export const NATS_FEATURE_SINCE = {
  /** Consumers filtering on several subjects (`filter_subjects`). */
  multiFilter: '2.10.0',
  /** Consumer priority groups: pinned clients and overflow (`priority_groups`, `priority_policy`). */
  priorityGroups: '2.11.0',
  /** A TTL on one message (`Nats-TTL` header, stream `allow_msg_ttl`). */
  perMessageTtl: '2.11.0',
  /** Pausing a consumer until a time (`pause_until`). */
  consumerPause: '2.11.0',
  /** A TTL on one key of a KV bucket (built on per-message TTL; markers for deletes). */
  kvPerKeyTtl: '2.11.0',
  /** Atomic batch publish: several messages stored all or none (`allow_atomic`). */
  atomicBatch: '2.12.0',
  /** Delayed and repeating messages (`Nats-Schedule`, stream `allow_msg_schedules`). */
  messageSchedules: '2.12.0',
} as const

export type NatsFeature = keyof typeof NATS_FEATURE_SINCE

export type NatsServerFeatures = { version: string } & Record<NatsFeature, boolean>

/** `2.15.3`, `v2.11.0-RC.1`, `2.10` → [major, minor, patch]; undefined when it is no version. */
export function parseNatsVersion(version: string): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(version.trim())
  if (m === null) return undefined
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)]
}

/**
 * Orders two versions by major, minor, patch (negative: a is older). A pre-release counts as its
 * release (2.11.0-RC.1 has what 2.11.0 has, near enough for feature checks); an unreadable
 * version is older than any.
 */
export function compareNatsVersions(a: string, b: string): number {
  const pa = parseNatsVersion(a)
  const pb = parseNatsVersion(b)
  if (pa === undefined || pb === undefined) return pa === undefined ? (pb === undefined ? 0 : -1) : 1
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return (pa[i] as number) - (pb[i] as number)
  return 0
}

export const natsVersionAtLeast = (version: string, min: string): boolean => compareNatsVersions(version, min) >= 0

/** What a server of `version` has. */
export function natsFeaturesOf(version: string): NatsServerFeatures {
  const features = Object.fromEntries(
    Object.entries(NATS_FEATURE_SINCE).map(([feature, since]) => [feature, natsVersionAtLeast(version, since)]),
  ) as Record<NatsFeature, boolean>
  return { version, ...features }
}

/**
 * What the server this connection talks to has. Read anew at each call: after a reconnect to
 * another server of a cluster (mid-upgrade, say) the answer follows the server now connected.
 */
export function natsServerFeatures(nc: { info?: { version: string } | undefined }): NatsServerFeatures {
  return natsFeaturesOf(nc.info?.version ?? '0.0.0')
}
