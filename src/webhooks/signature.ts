import { createHmac, timingSafeEqual } from 'node:crypto'
import { SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../api/webhook-wire.ts'
import { AppError } from '../kernel/errors.ts'

/*
 * Signed webhook calls, in the scheme GitHub and Stripe use: the sender computes
 * HMAC-SHA256(secret, "<timestamp>.<payload>") and sends it as `X-Webhook-Signature: sha256=<hex>`
 * with `X-Webhook-Timestamp: <unix seconds>`. The payload is the raw request body as received
 * (POST/PUT/PATCH) or the raw query string without its `?` (GET/DELETE), so every byte the
 * function's input comes from is covered. The timestamp is inside the signed text, so a captured
 * call replayed later than the tolerance is refused; within it a replay is possible (as with
 * GitHub and Stripe): a function that must run once per event deduplicates on an id of its own.
 */

/** What the gateway forwards of a signed call: the two headers and the exact payload bytes (as text). */
export interface SignedCall {
  timestamp: string
  signature: string
  payload: string
}

/** The `sha256=<hex>` value for a payload (what a sender computes; the tests sign with it too). */
export function signWebhook(secret: string, timestamp: string, payload: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(payload).digest('hex')}`
}

const invalidSignature = (detail: string) => AppError.of('webhook.signature_invalid', detail)

/**
 * Refuses (401) a call whose signature is missing or wrong, or whose timestamp is further than
 * `toleranceSeconds` from `nowMs`. The comparison is constant-time over the digest bytes.
 */
export function verifyWebhook(secret: string, call: SignedCall, toleranceSeconds: number, nowMs: number): void {
  if (call.timestamp === '' || call.signature === '')
    throw invalidSignature(
      `this webhook requires signed calls: ${TIMESTAMP_HEADER} and ${SIGNATURE_HEADER} (sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">)`,
    )
  if (!/^\d{1,12}$/.test(call.timestamp)) throw invalidSignature(`${TIMESTAMP_HEADER} must be the Unix time in seconds`)
  const skew = Math.abs(nowMs / 1000 - Number(call.timestamp))
  if (skew > toleranceSeconds)
    throw AppError.of(
      'webhook.signature_expired',
      `${TIMESTAMP_HEADER} is ${String(Math.round(skew))} s from the server clock; at most ${String(toleranceSeconds)} s are accepted`,
    )
  const given = /^sha256=([0-9a-fA-F]{64})$/.exec(call.signature.trim())?.[1]
  if (given === undefined) throw invalidSignature(`${SIGNATURE_HEADER} must be sha256=<64 hex digits>`)
  const want = createHmac('sha256', secret).update(`${call.timestamp}.`).update(call.payload, 'utf8').digest()
  if (!timingSafeEqual(Buffer.from(given, 'hex'), want))
    throw invalidSignature('the signature does not match the payload and timestamp')
}
