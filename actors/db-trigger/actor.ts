import { Value } from '@sinclair/typebox/value'
import { DbTriggerPollReply, type DbTriggerPoll } from '../../schemas/db-triggers.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import { defineActor, type Actor, type ActorContext, type ActorFactory } from '../runtime/define-actor.ts'
import { DB_TRIGGER_POLL_SUBJECT, dbTriggerProtocol } from '../protocols/db-trigger.ts'

/*
 * The db-trigger actor: one per database trigger, a poll loop kept in its `poll` timer (which lives
 * in ACTOR_STATE, so a takeover resumes it). The host has no database: each poll is run by the
 * resource service (`svc.dbtriggers.poll`, src/db-triggers/poll.ts), which reads the rows, enqueues
 * the batch's job and advances the bookmark. The bookmark is NOT in this state but in the trigger's
 * Postgres row (durable business state the API shows), written there fenced with this actor's
 * lease revision (`ctx.fence`): a host that lost its lease is refused (`stale`) and moves nothing.
 *
 * Pacing: every `poll_interval_seconds`; at once again after a full batch (rows are waiting), up to
 * `batchesPerTurn` batches per turn; soon (≤ 1 s) when the service was busy with this trigger or held
 * rows back behind an open transaction; after a failure `interval × 2^failures`, at most
 * `backoffMaxMs` (never sooner than the interval). `remove`, `is_active: false`, or a service answer
 * `inactive` / `gone` stop the loop.
 */
export interface DbTriggerActorState {
  version: number
  active: boolean
  intervalMs: number
  /** Consecutive failed polls (the backoff exponent). */
  failures: number
}

export interface DbTriggerActorDeps {
  /** Runs one poll; resolves with the service's answer, rejects when nobody answered. */
  poll(req: DbTriggerPoll): Promise<DbTriggerPollReply>
  backoffMaxMs: number
  batchesPerTurn: number
}

type Ctx = ActorContext<DbTriggerActorState, 'poll'>

/** The delay after `failures` consecutive failures: doubling from the interval, capped (but never below the interval). */
export function backoffMs(intervalMs: number, failures: number, maxMs: number): number {
  return Math.max(intervalMs, Math.min(maxMs, intervalMs * 2 ** Math.min(failures, 30)))
}

export function dbTriggerActor(d: DbTriggerActorDeps): Actor {
  const fail = (ctx: Ctx, s: DbTriggerActorState, error: string): void => {
    const failures = s.failures + 1
    const delay = backoffMs(s.intervalMs, failures, d.backoffMaxMs)
    ctx.log.warn({ error, failures, retry_in_ms: delay }, 'database trigger poll failed; backing off')
    ctx.setState({ ...s, failures })
    ctx.setTimer('poll', delay)
  }

  return defineActor({
    protocol: dbTriggerProtocol,
    state: {
      initial: (): DbTriggerActorState => ({ version: 0, active: false, intervalMs: 10_000, failures: 0 }),
      idleMs: 60_000,
    },
    handlers: {
      async set(ctx, m) {
        if (m.version <= ctx.state.version) return
        ctx.setState({ version: m.version, active: m.active, intervalMs: m.poll_interval_seconds * 1000, failures: 0 })
        // a change takes effect at once (a first activation sets its bookmark now)
        if (m.active) ctx.setTimer('poll', 0)
        else ctx.clearTimer('poll')
      },
      async remove(ctx, m) {
        if (m.version <= ctx.state.version) return
        ctx.setState({ ...ctx.state, version: m.version, active: false })
        ctx.clearTimer('poll')
      },
    },
    timers: {
      async poll(ctx) {
        const s = ctx.state
        if (!s.active) return
        for (let n = 1; ; n++) {
          let reply: DbTriggerPollReply
          try {
            reply = await d.poll({ trigger_id: ctx.key, fence: ctx.fence })
          } catch (err) {
            return fail(
              ctx,
              s,
              `no answer from the resource service: ${err instanceof Error ? err.message : String(err)}`,
            )
          }
          if (!reply.ok) return fail(ctx, s, reply.error)
          const ok = { ...s, failures: 0 }
          switch (reply.status) {
            case 'stale':
              // a newer lease polled this trigger: this host is losing the partition. Commit nothing
              // (the timer stays armed in the stored state for whoever owns the key now).
              throw new Error('database trigger polled under a newer lease: this host lost it')
            case 'gone':
            case 'inactive':
              ctx.setState({ ...ok, active: false })
              ctx.clearTimer('poll')
              return
            case 'busy':
            case 'held':
              ctx.setState(ok)
              ctx.setTimer('poll', Math.min(s.intervalMs, 1000))
              return
            case 'fired':
              if (reply.more && n < d.batchesPerTurn) continue
              ctx.setState(ok)
              ctx.setTimer('poll', reply.more ? 0 : s.intervalMs)
              return
            default:
              ctx.setState(ok)
              ctx.setTimer('poll', s.intervalMs)
              return
          }
        }
      },
    },
  })
}

/** The service side of a poll, over NATS request/reply (the actor host has no database). */
export function pollOverNats(nc: NatsConnection, names: NatsNames, timeoutMs: number): DbTriggerActorDeps['poll'] {
  return async (req) => {
    const msg = await nc.request(names.subject(DB_TRIGGER_POLL_SUBJECT), JSON.stringify(req), { timeout: timeoutMs })
    const reply: unknown = msg.json()
    if (!Value.Check(DbTriggerPollReply, reply))
      throw new Error('the database trigger service answered something unreadable')
    return reply
  }
}

/** The db-trigger actor of an actor host process. */
export const dbTriggerActorFactory: ActorFactory = async ({ nc, names, config }) =>
  dbTriggerActor({
    // the service may wait for the statement timeout twice (type lookup, rows) plus the enqueue
    poll: pollOverNats(nc, names, 2 * config.DB_TRIGGER_STATEMENT_TIMEOUT_MS + 15_000),
    backoffMaxMs: config.DB_TRIGGER_BACKOFF_MAX_SECONDS * 1000,
    batchesPerTurn: config.DB_TRIGGER_BATCHES_PER_TURN,
  })
