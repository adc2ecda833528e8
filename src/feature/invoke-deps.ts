import type { Config } from '../kernel/config.ts'
import type { EnqueueDeps } from '../jobs/enqueue.ts'
import type { JobStateStore } from '../jobs/job-state.ts'
import type { ResultStore } from '../jobs/result-store.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'

/*
 * What running a function needs (src/functions/invoke.ts). Declared here, below the features,
 * because the workers' context and the chat tools hand it to every feature that runs functions.
 */
export interface InvokeDeps {
  nc: NatsConnection
  names: NatsNames
  config: Config
  enqueue: EnqueueDeps
  store: JobStateStore
  results: ResultStore
}
