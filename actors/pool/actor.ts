import { initialPoolDesired, type PoolDesired } from '../../schemas/sandbox-pool.ts'
import { defineActor, type Actor, type ActorContext, type ActorFactory } from '../runtime/define-actor.ts'
import { poolProtocol } from '../protocols/pool.ts'

/*
 * The pool actor: the desired state of one container pool, durable in ACTOR_STATE (so it outlives
 * every worker process and actor host) and changed only by its messages, one at a time. It does
 * no I/O: the worker processes watch its state key (`pool.<key>`) and converge to it
 * (sandbox/control.ts); the data path never goes through it. Each message bumps `seq`; a
 * redelivered message (same request id) changes nothing.
 */
const KEEP = 32

type Ctx = ActorContext<PoolDesired>

function change(
  ctx: Ctx,
  op: 'scale' | 'reload' | 'restart',
  requestId: string,
  edit: (s: PoolDesired, seq: number) => Partial<PoolDesired>,
): void {
  const s = ctx.state
  if (s.requests.some((r) => r.id === requestId)) return
  const seq = s.seq + 1
  ctx.setState({ ...s, ...edit(s, seq), seq, requests: [...s.requests, { id: requestId, seq, op }].slice(-KEEP) })
}

export function poolActor(): Actor {
  return defineActor({
    protocol: poolProtocol,
    state: { initial: initialPoolDesired, idleMs: 60_000 },
    handlers: {
      async scale(ctx, m) {
        change(ctx, 'scale', m.request_id, () => ({ target: m.target }))
      },
      async reload(ctx, m) {
        change(ctx, 'reload', m.request_id, (s) => ({
          generation: s.generation + 1,
          ...(m.packages_dir === undefined ? {} : { packages_dir: m.packages_dir }),
        }))
      },
      async restart(ctx, m) {
        change(ctx, 'restart', m.request_id, (s, seq) => ({
          restarts: [...s.restarts, { name: m.name, seq }].slice(-KEEP),
        }))
      },
    },
  })
}

export const poolActorFactory: ActorFactory = async () => poolActor()
