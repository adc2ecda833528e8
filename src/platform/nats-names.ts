/*
 * Every subject, stream and bucket name goes through here so installations (and test files)
 * sharing one NATS server stay apart: NATS_PREFIX `t42` gives subjects `t42.rpc.…` and streams
 * `t42_JOBS`. Pure; the gateway imports it.
 */
export interface NatsNames {
  prefix: string
  subject(s: string): string
  stream(n: string): string
  bucket(n: string): string
}

export function natsNames(prefix: string): NatsNames {
  if (prefix !== '' && !/^[A-Za-z0-9_-]+$/.test(prefix))
    throw new Error(`NATS_PREFIX must be letters, digits, - or _ (got ${prefix})`)
  return {
    prefix,
    subject: (s) => (prefix === '' ? s : `${prefix}.${s}`),
    stream: (n) => (prefix === '' ? n : `${prefix}_${n}`),
    bucket: (n) => (prefix === '' ? n : `${prefix}_${n}`),
  }
}

/**
 * The subject the gateway publishes batches of request-log records on (core NATS, not stored);
 * the analytics writer of the resources role takes each batch in a queue group (src/analytics/).
 */
export const requestLogSubject = (names: NatsNames): string => names.subject('analytics.requests')

/** The NATS header of a request-log batch naming how many records (JSONEachRow lines) it holds. */
export const REQUEST_LOG_RECORDS_HEADER = 'Records'
