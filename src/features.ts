import { featureActors, featureKinds } from './feature/collect.ts'
import type { Feature } from './feature/define.ts'
import { accessFeature } from './access/module.ts'
import { adapterFeature } from './adapter/module.ts'
import { systemFeature } from './system/module.ts'
import { kindsFeature } from './kinds/module.ts'
import { chatsFeature } from './chats/module.ts'
import { dependenciesFeature } from './dependencies/module.ts'
import { discoveryFeature } from './discovery/module.ts'
import { sandboxAdminFeature } from './functions/admin-module.ts'
import { functionsFeature } from './functions/module.ts'
import { identityFeature } from './identity/module.ts'
import { jobsFeature } from './jobs/module.ts'
import { manifestsFeature } from './manifests/module.ts'
import { namespacesFeature } from './namespaces/module.ts'
import { resourcesFeature } from './resources/module.ts'
import { statesFeature } from './states/module.ts'
import { templateApiFeature } from './template-api/module.ts'
import { connectorsFeature } from './connectors/module.ts'
import { mcpServersFeature } from './mcp-servers/module.ts'
import { componentsFeature } from './components/module.ts'
import { dataFeature } from './data/module.ts'
import { filesFeature } from './files/module.ts'
import { schedulesFeature } from './schedules/module.ts'
import { webhooksFeature } from './webhooks/module.ts'
import { dbTriggersFeature } from './db-triggers/module.ts'
import { eventsFeature } from './events/module.ts'
import { configFeature } from './gitops/module.ts'
import { mcpFeature } from './mcp/module.ts'
import { usageFeature } from './usage/module.ts'
import { analyticsFeature } from './analytics/module.ts'

/*
 * The features of the platform, one module each (`src/<feature>/module.ts`, `defineFeature`), in the
 * order their routes and parts are set up and their contributions collected (src/feature/collect.ts).
 * A new feature is one import and one line here.
 */
export const FEATURES: readonly Feature[] = [
  kindsFeature,
  systemFeature,
  identityFeature,
  resourcesFeature,
  jobsFeature,
  functionsFeature,
  chatsFeature,
  sandboxAdminFeature,
  accessFeature,
  namespacesFeature,
  dependenciesFeature,
  adapterFeature,
  statesFeature,
  templateApiFeature,
  discoveryFeature,
  manifestsFeature,
  connectorsFeature,
  mcpServersFeature,
  componentsFeature,
  dataFeature,
  filesFeature,
  schedulesFeature,
  webhooksFeature,
  dbTriggersFeature,
  eventsFeature,
  configFeature,
  mcpFeature,
  usageFeature,
  analyticsFeature,
]

/** Every resource kind of the platform (the features' `kinds`), in list order. */
export const KINDS = featureKinds(FEATURES)

/** Every actor type the actor host runs (the features' `actors`). */
export const ACTOR_FACTORIES = featureActors(FEATURES)
