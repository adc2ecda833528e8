import type pg from 'pg'
import { defineActor } from '../../actors/runtime/define-actor.ts'
import { counterProtocol } from './counter-protocol.ts'

/*
 * The test actor: counts numbered messages per key. It records every handler run (host, start,
 * end) in Postgres so the test can check that no two runs of one key ever overlapped, and it
 * counts gaps in the numbering, which would show a message handled out of order or lost. `applied`
 * counts the messages that moved the state on (exactly `last` when nothing was lost or doubled);
 * `dups` the deliveries of messages already in the state (redelivered after their state write landed
 * but before their ack did), which change nothing else.
 */
export interface CounterState {
  last: number
  gaps: number
  pinged: boolean
  applied: number
  dups: number
}

export function counterActor(db: pg.Pool | null, host: string) {
  return defineActor({
    protocol: counterProtocol,
    state: { initial: (): CounterState => ({ last: 0, gaps: 0, pinged: false, applied: 0, dups: 0 }) },
    handlers: {
      async count(ctx, msg) {
        if (msg.poison === true) throw new Error('poisoned message')
        const started = Date.now()
        await new Promise((r) => setTimeout(r, 3))
        await db?.query('insert into actor_runs (key, n, host, started_ms, ended_ms) values ($1, $2, $3, $4, $5)', [
          ctx.key,
          msg.n,
          host,
          started,
          Date.now(),
        ])
        const s = ctx.state
        if (msg.n === s.last + 1) ctx.setState({ ...s, last: msg.n, applied: s.applied + 1 })
        else if (msg.n > s.last + 1) ctx.setState({ ...s, last: msg.n, gaps: s.gaps + 1, applied: s.applied + 1 })
        else ctx.setState({ ...s, dups: s.dups + 1 })
        if (msg.arm === true) ctx.setTimer('ping', 300)
      },
    },
    timers: {
      async ping(ctx) {
        ctx.setState({ ...ctx.state, pinged: true })
      },
    },
  })
}

export const ACTOR_RUNS_TABLE =
  'create table if not exists actor_runs (key text not null, n integer not null, host text not null, started_ms bigint not null, ended_ms bigint not null)'
