import { Value } from '@sinclair/typebox/value'
import { ScheduleFireReply, type ScheduleFire } from '../../schemas/triggers.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'
import type { NatsNames } from '../../src/platform/nats-names.ts'
import { nextTick } from '../../src/kernel/cron.ts'
import { defineActor, type Actor, type ActorContext, type ActorFactory } from '../runtime/define-actor.ts'
import { SCHEDULE_FIRE_SUBJECT, scheduleProtocol } from '../protocols/schedule.ts'

/*
 * The schedule actor: one per schedule. Its state holds the cron settings and `next`, the next
 * tick (epoch ms), and the `fire` timer is armed for exactly that time, so it lives in ACTOR_STATE
 * with the rest of the state and survives a takeover: the new owner of the partition loads keys
 * with armed timers at acquisition and fires what is due. A tick is fired by asking the resource
 * service (`svc.schedules.fire`) to run it; `next` moves to the tick after it only when the
 * service answered, committed by CAS with the state. So a host dying mid-fire leaves `next` where
 * it was and the new owner fires the same tick again — nothing is skipped — and the service keeps
 * one run per (schedule, tick) (a `schedule_runs` row and the job id `sched:<id>:<tick>`), so
 * nothing is doubled either. The next tick is computed from the tick just fired, never from the
 * clock, so overdue ticks after a takeover are caught up one by one (within the misfire grace).
 */
export interface ScheduleActorState {
  version: number
  cron: string | null
  tz: string
  active: boolean
  /** The next tick to fire (epoch ms); null: inactive, removed or never fires again. */
  next: number | null
  /** The last tick handed to the service. */
  fired: number | null
}

export interface ScheduleActorDeps {
  /** Runs one tick; resolves with the service's answer, rejects when nobody answered (retried). */
  fire(req: ScheduleFire): Promise<ScheduleFireReply>
  misfireGraceMs: number
  maxCatchUp: number
  now?: () => number
}

type Ctx = ActorContext<ScheduleActorState, 'fire'>

export function scheduleActor(d: ScheduleActorDeps): Actor {
  const now = d.now ?? Date.now

  const arm = (ctx: Ctx, next: number | null): void => {
    if (next === null) ctx.clearTimer('fire')
    else ctx.setTimer('fire', Math.max(0, next - now()))
  }

  return defineActor({
    protocol: scheduleProtocol,
    state: {
      initial: (): ScheduleActorState => ({
        version: 0,
        cron: null,
        tz: 'UTC',
        active: false,
        next: null,
        fired: null,
      }),
      idleMs: 60_000,
    },
    handlers: {
      async set(ctx, m) {
        const s = ctx.state
        if (m.version <= s.version) return
        const same = s.cron === m.cron_expression && s.tz === m.timezone && s.active && m.active
        // unchanged timing keeps the armed tick (an update of the input must not skip or move it)
        const next = !m.active
          ? null
          : same && s.next !== null
            ? s.next
            : nextTick(m.cron_expression, m.timezone, now())
        ctx.setState({
          version: m.version,
          cron: m.cron_expression,
          tz: m.timezone,
          active: m.active,
          next,
          fired: s.fired,
        })
        arm(ctx, next)
      },
      async remove(ctx, m) {
        if (m.version <= ctx.state.version) return
        ctx.setState({ ...ctx.state, version: m.version, active: false, next: null })
        ctx.clearTimer('fire')
      },
    },
    timers: {
      async fire(ctx) {
        const s = ctx.state
        if (!s.active || s.cron === null || s.next === null) return
        let next: number | null = s.next
        let fired = s.fired
        const t0 = now()
        for (let n = 0; next !== null && next <= t0 && n < d.maxCatchUp; n++) {
          if (t0 - next > d.misfireGraceMs)
            ctx.log.warn(
              { tick: new Date(next).toISOString(), late_ms: t0 - next },
              'schedule tick missed (later than SCHEDULE_MISFIRE_GRACE_SECONDS): skipped',
            )
          else {
            // throws when no service answered: nothing is committed and the timer stays due
            const reply = await d.fire({ schedule_id: ctx.key, tick: next, version: s.version })
            if (!reply.ok)
              ctx.log.warn(
                { tick: new Date(next).toISOString(), error: reply.error },
                'schedule tick refused by the service',
              )
            else if (reply.status === 'gone') {
              // deleted while its `remove` was lost: stop firing
              ctx.setState({ ...s, active: false, next: null, fired })
              ctx.clearTimer('fire')
              return
            }
          }
          fired = next
          next = nextTick(s.cron, s.tz, next)
        }
        ctx.setState({ ...s, next, fired })
        arm(ctx, next)
      },
    },
  })
}

/** The service side of a fire, over NATS request/reply (the actor host has no database). */
export function fireOverNats(nc: NatsConnection, names: NatsNames, timeoutMs = 15_000): ScheduleActorDeps['fire'] {
  return async (req) => {
    const msg = await nc.request(names.subject(SCHEDULE_FIRE_SUBJECT), JSON.stringify(req), { timeout: timeoutMs })
    const reply: unknown = msg.json()
    if (!Value.Check(ScheduleFireReply, reply)) throw new Error('the schedule service answered something unreadable')
    return reply
  }
}

/** The schedule actor of an actor host process. */
export const scheduleActorFactory: ActorFactory = async ({ nc, names, config }) =>
  scheduleActor({
    fire: fireOverNats(nc, names),
    misfireGraceMs: config.SCHEDULE_MISFIRE_GRACE_SECONDS * 1000,
    maxCatchUp: config.SCHEDULE_MAX_CATCHUP,
  })
