import type { JetStreamClient } from '@nats-io/jetstream'
import type { ActorFactory } from '../../actors/runtime/define-actor.ts'
import type { ActorTeller } from '../../actors/runtime/tell.ts'
import type { SandboxExecutor } from '../../sandbox/executor.ts'
import type { BoundRoute } from '../api/bind.ts'
import type { RouteDef } from '../api/route.ts'
import type { Config } from '../kernel/config.ts'
import type { ErrorCodeInfo } from '../kernel/error-codes.ts'
import type { Logger } from '../kernel/log.ts'
import type { JobState, JobStateStore, Pool } from '../jobs/job-state.ts'
import type { JobService } from '../jobs/start.ts'
import type { JobExecutor } from '../jobs/worker.ts'
import type { Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import type { RecordDecorator } from '../resources/decorate.ts'
import type { AnyKind } from '../resources/kind.ts'
import type { ResourceService } from '../resources/service.ts'
import type { SpecCheck } from '../resources/validation.ts'
import type { ComponentProxies } from './component-proxy.ts'
import type { ConfigKind } from './config-kinds.ts'
import type { HealthCheck, HealthSource } from './health.ts'
import type { InvokeDeps } from './invoke-deps.ts'
import type { PermissionInfo } from './permissions.ts'
import type { StoreKeyProbe } from './store-key-probe.ts'
import type { ToolProviderFactory } from './tools.ts'

/*
 * A feature of the platform as one module (`src/<feature>/module.ts`): the Feature object says
 * everything the feature contributes (routes, kinds, actors, agent tools, permissions, error codes,
 * spec checks, record decorators, component proxies, a configuration preflight) and what it runs
 * in each role. `src/features.ts` lists the features once; the roles (src/roles/) collect the
 * contributions from that list and hand them to their consumers. Importing a module registers
 * nothing anywhere: a new feature is added by writing its module and listing it in FEATURES.
 */
export interface Shared {
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  config: Config
  log: Logger
}

/** What every feature's factories get in the resource-service role, before the features' parts are built. */
export interface ServiceBase extends Shared {
  db: Db
  resources: ResourceService
  jobs: JobService
  /** The actor host of this process, when it runs one (ROLES with actors): messages told in-process. */
  actorsHere: ActorTeller
}

/** What a feature gets in the resource-service role (ROLES includes `resources`). */
export interface ServiceContext extends ServiceBase {
  /** Every feature's declared permissions (the access feature's reference adds the kinds'). */
  permissions: readonly PermissionInfo[]
  /** Every feature's component proxy factories, by area. */
  componentProxies: ComponentProxies
  /** Every feature's read-time record additions (the resource routes apply them). */
  recordDecorators: readonly RecordDecorator[]
  /** The store-key lookup a service part provides (states), read at call time: parts start in list order. */
  storeKeyProbe(): StoreKeyProbe | undefined
  /** Every feature's `configKinds` (declarative config and packages carry them), built on first call. */
  configKinds(): readonly ConfigKind[]
  /** Every feature's `health` check, for `GET /api/v1/system/health`. */
  healthChecks: readonly HealthSource[]
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
  /** Every feature's agent tool providers (the chat turns offer them next to the chats' own). */
  tools: readonly ToolProviderFactory[]
}

export interface ServicePart {
  routes: BoundRoute[]
  /** Something the feature keeps running in this role (a timer, a sweep); stopped at shutdown. */
  stop?: () => Promise<void>
  /** Whether a key exists in a store (states): other features read it through `ctx.storeKeyProbe()`. */
  storeKeyProbe?: StoreKeyProbe
}

export interface WorkerPart {
  /** Per pool: the job executor this feature runs there. */
  executors?: Partial<Record<Pool, JobExecutor>>
  /** Per pool: what to do when a job of a lost worker ends failed. */
  onAbandoned?: Partial<Record<Pool, (job: JobState) => Promise<void>>>
}

/** What a feature's spec checks are built from: in both roles that write resources, before the resource engine exists. */
export interface SpecCheckContext {
  config: Config
  /** The platform's database (the data feature looks up a query's connection type). */
  db: Db
  /** The URL the platform connected with (the local cluster's too): the data feature's "platform's own database". */
  databaseUrl: string | undefined
}

/** `console` runs no feature (src/roles/console.ts): it serves the web console and proxies to a gateway. */
export type Role = 'gateway' | 'resources' | 'workers' | 'actors' | 'console'

/** What a feature's routes may depend on: every feature's kinds (the resource engine's CRUD routes). */
export interface RouteContext {
  kinds: readonly AnyKind[]
}

export interface Feature {
  name: string
  routes(c: RouteContext): RouteDef[]
  /** Resource kinds: each gets CRUD routes, documents, permissions and storage from the resource engine. */
  kinds?: readonly AnyKind[]
  /** Actor types the actor host runs. */
  actors?: readonly ActorFactory[]
  /** Agent tool providers, built once per chat worker. */
  tools?: readonly ToolProviderFactory[]
  /** Permissions the feature checks besides its kinds', for the permission reference. */
  permissions?: readonly PermissionInfo[]
  /** Error codes beyond the kernel's table, registered by the composition root at start. */
  errorCodes?: Readonly<Record<string, ErrorCodeInfo>>
  /** Who runs a component's proxy calls of an area whose targets are this feature's kind. */
  componentProxies?: ComponentProxies
  /** Rules on specs that need settings, the database or feature code (the resource engine runs them on every write). */
  specChecks?(ctx: SpecCheckContext): SpecCheck[]
  /** Read-time fields added to the records the resource routes answer. */
  recordDecorators?(ctx: ServiceBase): RecordDecorator[]
  /**
   * The kinds of this feature that declarative config and packages carry, when they are not
   * generic resource kinds (those come from `kinds`): built in the resource-service role.
   */
  configKinds?(ctx: ServiceContext): ConfigKind[]
  /**
   * Services and warnings added to `GET /api/v1/system/health` (the contract: `health.ts`), asked
   * on every request in the resources role.
   */
  health?: HealthCheck
  /** Refuses a configuration that cannot work, before anything starts (throws). */
  preflight?(config: Config, roles: ReadonlySet<Role>): void
  service?(ctx: ServiceContext): ServicePart | Promise<ServicePart>
  workers?(ctx: WorkerContext): WorkerPart | Promise<WorkerPart>
}

export const defineFeature = (f: Feature): Feature => f
