import type { Db } from '../../src/platform/db.ts'
import type { NatsConnection } from '../../src/platform/nats.ts'

/*
 * Counts the crossings a piece of work makes: Postgres round trips (every query method of the
 * platform's pool, where the caller's stack is still known) and acknowledged NATS operations (`request`: JetStream publishes with
 * their PubAck, KV reads and writes, RPCs; `flush`: a PING/PONG), each with the code that made it
 * (the innermost frames of src/ and actors/ on the async stack). A measuring instrument for tests
 * and the crossings report: it patches prototypes while `start()`ed and restores them on `stop()`.
 */
export interface Crossing {
  what: 'pg' | 'nats'
  /** SQL's first words, or the NATS subject (prefix removed). */
  detail: string
  /** Where in the code: `file:function` of the project frames, innermost first. */
  site: string
  /** When it started, in ms since `start()`. */
  at: number
}

/** Frames that only pass a call through (the site is their caller). */
const PLUMBING =
  /platform\/db\.ts|platform\/typed-rows\.ts|platform\/jetstream\.ts|platform\/acked-publish\.ts|jobs\/publish\.ts|job-state\.ts:\d+ (write|<anonymous>|throughOutages)$|tests\/helpers\//

function siteOf(stack: string): string {
  const frames = stack
    .split('\n')
    .slice(1)
    .filter((l) => !l.includes('node_modules'))
    .map((l) => /at (?:async )?(?:(\S+) \()?.*?\/(src|actors|gateway)\/([^:]+):(\d+)/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => `${m[2] ?? ''}/${m[3] ?? ''}:${m[4] ?? ''}${m[1] === undefined ? '' : ` ${m[1]}`}`)
    .filter((f) => !PLUMBING.test(f))
  return frames.slice(0, 3).join(' < ')
}

const POOL_METHODS = [
  'any',
  'anyFirst',
  'exists',
  'many',
  'manyFirst',
  'maybeOne',
  'maybeOneFirst',
  'one',
  'oneFirst',
  'query',
  'transaction',
  'connect',
] as const

export function crossingCounter(nc: NatsConnection, db: Db, prefix: string) {
  const seen: Crossing[] = []
  let on = false
  let t0 = 0
  const proto = Object.getPrototypeOf(nc) as {
    request: (...a: unknown[]) => Promise<unknown>
    publish: (...a: unknown[]) => void
    flush: () => Promise<void>
  }
  const pool = db as unknown as Record<string, (...a: unknown[]) => unknown>
  const origPool = Object.fromEntries(POOL_METHODS.map((m) => [m, pool[m]]))
  const origRequest = proto.request
  const origPublish = proto.publish
  const origFlush = proto.flush
  // `request` publishes through `publish`: counted once, as the request
  let inRequest = false
  const strip = (s: string) =>
    s.startsWith(`${prefix}.`) ? s.slice(prefix.length + 1) : s.replace(`_${prefix}`, '').replace(`${prefix}_`, '')
  const record = (what: Crossing['what'], detail: string) => {
    if (!on) return
    // deep enough to get past the publish and retry plumbing to the caller
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 40
    const stack = new Error().stack ?? ''
    Error.stackTraceLimit = limit
    seen.push({ what, detail, site: siteOf(stack), at: performance.now() - t0 })
  }
  return {
    start() {
      seen.length = 0
      on = true
      t0 = performance.now()
      proto.request = function (this: unknown, ...a: unknown[]) {
        record('nats', strip(String(a[0])))
        inRequest = true
        try {
          return origRequest.apply(this, a)
        } finally {
          inRequest = false
        }
      }
      // a publish with a reply subject is acknowledged too: the lean JetStream publishes
      // (src/platform/acked-publish.ts) are answered on the publisher's own subscription
      proto.publish = function (this: unknown, ...a: unknown[]) {
        const subject = String(a[0])
        const reply = (a[2] as { reply?: unknown } | undefined)?.reply
        if (!inRequest && typeof reply === 'string' && reply !== '') record('nats', strip(subject))
        origPublish.apply(this, a)
      }
      proto.flush = function (this: NatsConnection) {
        record('nats', 'flush')
        return origFlush.apply(this)
      }
      for (const name of POOL_METHODS) {
        const orig = origPool[name] as (...a: unknown[]) => unknown
        pool[name] = function (this: unknown, ...a: unknown[]) {
          const q = a[0]
          const text = typeof q === 'function' ? 'transaction' : String((q as { sql?: unknown } | null)?.sql ?? '')
          record('pg', text.replace(/\s+/g, ' ').trim().slice(0, 60))
          return orig.apply(this, a)
        }
      }
    },
    stop(): Crossing[] {
      on = false
      proto.request = origRequest
      proto.publish = origPublish
      proto.flush = origFlush
      for (const name of POOL_METHODS) pool[name] = origPool[name] as (...a: unknown[]) => unknown
      return [...seen]
    },
  }
}
