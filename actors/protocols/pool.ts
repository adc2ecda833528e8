import { Type as T } from '@sinclair/typebox'
import { RequestId } from '../../schemas/sandbox-pool.ts'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'

/*
 * The pool actor's protocol: one actor per container pool (key `sandbox`: the untrusted warm pool;
 * `shared`: the trusted shared workers). The admin endpoints send `scale`, `reload` and `restart`;
 * each carries a `request_id` chosen by the sender, which the worker processes echo when they
 * report having applied it. Imports only typebox and schemas/, so any sender can import it.
 */
export const poolProtocol = {
  type: 'pool',
  partitions: 4,
  messages: {
    /** The pool's size summed over every live worker process. */
    scale: T.Object(
      { request_id: RequestId, target: T.Integer({ minimum: 0, maximum: 10_000 }) },
      { additionalProperties: false },
    ),
    /** Recycle the idle members once; with `packages_dir` (null: none), the package set they mount. */
    reload: T.Object(
      { request_id: RequestId, packages_dir: T.Optional(T.Union([T.String({ maxLength: 4096 }), T.Null()])) },
      { additionalProperties: false },
    ),
    /** Destroy and replace the member of that name, wherever it runs. */
    restart: T.Object(
      { request_id: RequestId, name: T.String({ minLength: 1, maxLength: 200 }) },
      { additionalProperties: false },
    ),
  },
} as const satisfies ActorProtocol

/** Core NATS subject (below NATS_PREFIX) on which worker processes report what they applied. */
export const POOL_APPLIED_SUBJECT = 'sandbox.pool.applied'
