import { RequestError, RequestOne } from '@nats-io/nats-core/internal'

/*
 * nats.js 3.4 ends every request/reply by rejecting its (already resolved) deferred with a *new*
 * `RequestError("cancelled")`, so each JetStream publish, KV write and RPC pays for an Error with a
 * captured stack trace that nobody sees: 6–8% of a job worker's CPU in bench/queue. The rejection is
 * kept (same type and message, same code path) but with one shared instance. Applied once per
 * process; checked against @nats-io/nats-core 3.4.0 (pinned in package.json) — re-check on upgrade.
 */
interface Cancellable {
  timer?: { cancel(): void }
  mux: { cancel(r: unknown): void }
  deferred: { reject(err: unknown): void }
}

const CANCELLED = new RequestError('cancelled')
let applied = false

export function applyRequestPatch(): void {
  if (applied) return
  applied = true
  const proto = RequestOne.prototype as unknown as Cancellable & { cancel(err?: Error): void }
  proto.cancel = function cancel(this: Cancellable, err?: Error) {
    this.timer?.cancel()
    this.mux.cancel(this)
    this.deferred.reject(err ?? CANCELLED)
  }
}
