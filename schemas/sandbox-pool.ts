import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable } from './common.ts'

/*
 * The container pools as actors (actors/pool/): the desired state each pool actor keeps in
 * ACTOR_STATE, the report a worker process publishes after applying it, and what a worker process
 * writes in its heartbeat (WORKERS, `sandbox.<node>`), which the admin endpoints read.
 */

/** `sandbox`: the untrusted warm pool; `shared`: the trusted shared workers. */
export const PoolKey = T.Union([T.Literal('sandbox'), T.Literal('shared')])
export type PoolKey = Static<typeof PoolKey>
export const POOL_KEYS: readonly PoolKey[] = ['sandbox', 'shared']

export const RequestId = T.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' })

/** A pool actor's state: what every worker process converges to. */
export const PoolDesired = T.Object({
  /** Bumped by every message that changed something (a worker applies each seq once). */
  seq: T.Integer({ minimum: 0 }),
  /** The pool's size summed over every live worker process; null: each keeps its configured size. */
  target: Nullable(T.Integer({ minimum: 0 })),
  /** Bumped by every reload: a worker whose pool is older recycles its idle members once. */
  generation: T.Integer({ minimum: 0 }),
  /**
   * The installed package set (the directory mounted at /packages) of the last reload; null: no
   * packages; absent: never reloaded, each worker keeps what it found at start.
   */
  packages_dir: T.Optional(Nullable(T.String({ maxLength: 4096 }))),
  /** Recent restart requests by container name, with the seq that carried them (last 32). */
  restarts: T.Array(T.Object({ name: T.String({ maxLength: 200 }), seq: T.Integer() })),
  /** Recent requests with the seq that carried them (last 32): a duplicate id changes nothing. */
  requests: T.Array(
    T.Object({
      id: RequestId,
      seq: T.Integer(),
      op: T.Union([T.Literal('scale'), T.Literal('reload'), T.Literal('restart')]),
    }),
  ),
})
export type PoolDesired = Static<typeof PoolDesired>

export const initialPoolDesired = (): PoolDesired => ({
  seq: 0,
  target: null,
  generation: 0,
  restarts: [],
  requests: [],
})

const Count = T.Integer({ minimum: 0 })

/** One worker process's answer after applying a desired state (core NATS `sandbox.pool.applied`). */
export const PoolApplied = T.Object({
  node: T.String(),
  pool: PoolKey,
  seq: T.Integer(),
  /** The requests this application covered (several when changes arrived together). */
  request_ids: T.Array(RequestId),
  scale: T.Optional(T.Record(T.String(), T.Unknown())),
  reload: T.Optional(T.Record(T.String(), T.Unknown())),
  restart: T.Optional(T.Array(T.Object({ name: T.String(), found: T.Boolean() }))),
  error: T.Optional(T.String()),
})
export type PoolApplied = Static<typeof PoolApplied>

/** What a worker process applied of one pool actor's state. */
export const PoolNodeState = T.Object({
  seq: T.Integer(),
  generation: T.Integer(),
  /** This process's share of the target; null: its configured size. */
  share: Nullable(T.Integer()),
  /** Reloads (recycles of the idle members) this process did for a new generation. */
  reloads: Count,
})
export type PoolNodeState = Static<typeof PoolNodeState>

export const SharedWorkerEntry = T.Object({
  name: T.String(),
  inflight: T.Integer(),
  executions: T.Integer(),
  started_at: T.String(),
})

/** A worker process's heartbeat (`sandbox.<node>` in WORKERS): its pools' stats and what it applied. */
export const SandboxNodeInfo = T.Object(
  {
    idle: Count,
    in_use: Count,
    starting: Count,
    total: Count,
    min_size: Count,
    max_size: Count,
    waiting: Count,
    executions: Count,
    recycled: Count,
    destroyed_on_error: Count,
    executor: T.String(),
    driver: T.String(),
    names: T.Array(T.String()),
    pid: T.Integer(),
    /** This process's heartbeat interval: a beat older than three of them is a dead process. */
    interval_ms: T.Integer({ minimum: 1 }),
    shared: T.Object({ started: T.Boolean(), count: Count, workers: T.Array(SharedWorkerEntry) }),
    pools: T.Object({ sandbox: PoolNodeState, shared: PoolNodeState }),
  },
  { additionalProperties: true },
)
export type SandboxNodeInfo = Static<typeof SandboxNodeInfo>
