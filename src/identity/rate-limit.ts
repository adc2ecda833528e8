import { createHash } from 'node:crypto'
import { Kvm, type KV } from '@nats-io/kv'
import { AppError } from '../kernel/errors.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { isWrongLastSequence } from '../platform/jetstream.ts'

/*
 * Fixed-window counters shared by every process, in the KV bucket RATE_LIMITS whose
 * TTL is the window (NATS 2.9 has no per-key TTL). A key is `<scope>.<sha256(subject)>.<window>`:
 * hashing keeps emails and addresses out of NATS subjects; the window index makes a stale counter
 * from the previous window irrelevant even before it expires. Increments are CAS, so two gateways
 * counting the same client at once both count.
 */
export interface RateLimiter {
  /** Counts one hit; throws 429 with `Retry-After` once `max` hits were counted in this window. */
  hit(scope: string, subject: string, max: number): Promise<void>
  /** Hits counted in this window so far, without counting one. */
  peek(scope: string, subject: string): Promise<number>
  /** Counts one hit without a limit (a failure, counted after the fact). */
  record(scope: string, subject: string): Promise<void>
  /** The 429 `hit` throws, for a limit the caller decides from `peek`. */
  limited(): AppError
}

/** The bucket itself is provisioned with the rest of the layout (`provisionNats`, TTL = the window). */
export async function openRateLimits(nc: NatsConnection, names: NatsNames): Promise<KV> {
  return new Kvm(nc).open(names.bucket('RATE_LIMITS'))
}

export function createRateLimiter(kv: KV, windowSeconds: number): RateLimiter {
  const windowMs = windowSeconds * 1000
  const keyOf = (scope: string, subject: string, window: number) =>
    `${scope}.${createHash('sha256').update(subject.toLowerCase()).digest('hex').slice(0, 32)}.${String(window)}`
  const secondsLeft = (now: number) => Math.ceil((Math.floor(now / windowMs + 1) * windowMs - now) / 1000)
  const countOf = (e: Awaited<ReturnType<KV['get']>>) =>
    e === null || e.operation !== 'PUT' || e.length === 0 ? 0 : Number(e.string())
  return {
    async peek(scope, subject) {
      return countOf(await kv.get(keyOf(scope, subject, Math.floor(Date.now() / windowMs))))
    },
    async record(scope, subject) {
      await this.hit(scope, subject, Number.POSITIVE_INFINITY)
    },
    limited: () => limited(secondsLeft(Date.now())),
    async hit(scope, subject, max) {
      const now = Date.now()
      const window = Math.floor(now / windowMs)
      const key = keyOf(scope, subject, window)
      for (let i = 0; i < 20; i++) {
        const e = await kv.get(key)
        const count = countOf(e)
        if (count >= max) throw limited(secondsLeft(now))
        try {
          if (e === null || e.operation !== 'PUT') await kv.create(key, String(count + 1))
          else await kv.update(key, String(count + 1), e.revision)
          return
        } catch (err) {
          // a CAS write lost to a concurrent one: read again and retry
          if (!isWrongLastSequence(err)) throw err
        }
      }
      // Twenty lost races in a row: this subject is being hammered, which is what the limit is for.
      throw limited(1)
    },
  }
}

function limited(seconds: number): AppError {
  const retryAfter = Math.max(1, seconds)
  const err = new AppError(429, 'auth.rate_limited', `too many requests; try again in ${String(retryAfter)} s`)
  err.headers = { 'retry-after': String(retryAfter) }
  return err
}
