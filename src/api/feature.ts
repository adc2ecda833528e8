import type { JetStreamClient } from '@nats-io/jetstream'
import type { ActorTeller } from '../../actors/runtime/tell.ts'
import type { SandboxExecutor } from '../../sandbox/executor.ts'
import type { InvokeDeps } from '../functions/invoke.ts'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import type { JobState, JobStateStore, Pool } from '../jobs/job-state.ts'
import type { JobService } from '../jobs/start.ts'
import type { JobExecutor } from '../jobs/worker.ts'
import type { Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import type { ResourceService } from '../resources/service.ts'
import type { BoundRoute } from './bind.ts'
import type { RouteDef } from './route.ts'

/*
 * A feature of the platform as one module (`src/<feature>/module.ts`): its routes, the handlers
 * bound to them in the resource-service role, and what it runs in the workers role. `src/main.ts`
 * lists the features once; the roles (src/roles/) ask each feature for its part. A new feature is
 * added by writing its module and listing it in FEATURES.
 */
export interface Shared {
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  config: Config
  log: Logger
}

/** What a feature gets in the resource-service role (ROLES includes `resources`). */
export interface ServiceContext extends Shared {
  db: Db
  resources: ResourceService
  jobs: JobService
  /** The actor host of this process, when it runs one (ROLES with actors): messages told in-process. */
  actorsHere: ActorTeller
}

/** What a feature gets in the workers role (ROLES includes `workers`). */
export interface WorkerContext extends Shared {
  db: Db
  resources: ResourceService
  sandboxes: SandboxExecutor
  jobStore: JobStateStore
  invoke: InvokeDeps
  /** The actor host of this process, when it runs one (ROLES with actors): messages told in-process. */
  actorsHere: ActorTeller
}

export interface ServicePart {
  routes: BoundRoute[]
  /** Something the feature keeps running in this role (a timer, a sweep); stopped at shutdown. */
  stop?: () => Promise<void>
}

export interface WorkerPart {
  executors?: Partial<Record<Pool, JobExecutor>>
  /** Per pool: what to do when a job of a lost worker ends failed. */
  onAbandoned?: Partial<Record<Pool, (job: JobState) => Promise<void>>>
}

export type Role = 'gateway' | 'resources' | 'workers' | 'actors'

export interface Feature {
  name: string
  routes(): RouteDef[]
  /** Refuses a configuration that cannot work, before anything starts (throws). */
  preflight?(config: Config, roles: ReadonlySet<Role>): void
  service?(ctx: ServiceContext): ServicePart | Promise<ServicePart>
  workers?(ctx: WorkerContext): WorkerPart | Promise<WorkerPart>
}

export const defineFeature = (f: Feature): Feature => f
