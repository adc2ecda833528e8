import { readFileSync } from 'node:fs'
import {
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  type ConnectionOptions,
  type NatsConnection,
} from '@nats-io/transport-node'
import { readSeedFile, seedFileInboxPrefix } from '../../platform/nats-credentials.ts'

/*
 * How a backend service reaches the platform's NATS. A seed file the platform generated
 * (DATA_DIR/nats/events.nk) names the inbox prefix its user may subscribe to (`_INBOX_events`):
 * the client takes it from there, since with the default `_INBOX` every JetStream call would wait
 * for a reply it is not allowed to receive.
 */
export type NatsCredentials =
  /** An NKey seed file (`SU…`), e.g. the `events.nk` of a single-node platform. */
  | { seedFile: string; inboxPrefix?: string }
  /** A `.creds` file (JWT and seed, as `nsc` writes it). */
  | { credsFile: string; inboxPrefix?: string }
  | { user: string; password: string; inboxPrefix?: string }
  | { token: string; inboxPrefix?: string }

export function connectionOptions(credentials: NatsCredentials | undefined): Partial<ConnectionOptions> {
  if (credentials === undefined) return {}
  const inbox = (prefix: string | undefined) => (prefix === undefined ? {} : { inboxPrefix: prefix })
  if ('seedFile' in credentials)
    return {
      authenticator: nkeyAuthenticator(readSeedFile(credentials.seedFile)),
      ...inbox(credentials.inboxPrefix ?? seedFileInboxPrefix(credentials.seedFile)),
    }
  if ('credsFile' in credentials)
    return {
      authenticator: credsAuthenticator(readFileSync(credentials.credsFile)),
      ...inbox(credentials.inboxPrefix),
    }
  if ('token' in credentials) return { token: credentials.token, ...inbox(credentials.inboxPrefix) }
  return { user: credentials.user, pass: credentials.password, ...inbox(credentials.inboxPrefix) }
}

/** Reconnects forever: a NATS restart must not end the service (the durable keeps its place). */
export function connectEvents(
  servers: string | readonly string[],
  credentials: NatsCredentials | undefined,
  name: string,
): Promise<NatsConnection> {
  return connect({
    servers: typeof servers === 'string' ? servers.split(',') : [...servers],
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    ...connectionOptions(credentials),
  })
}
