import { defineFeature } from '../feature/define.ts'
import { createSecretBox, previousKeys } from '../kernel/crypto.ts'
import { webhookConfigKind } from './config-kind.ts'
import { webhookHandlers, webhookPermissions } from './handlers.ts'
import { webhookRoutes } from './routes.ts'
import { openWebhookBucket, syncWebhookBucket, webhookStore } from './store.ts'

/*
 * Webhooks: CRUD and calls (service role). The WEBHOOKS bucket is rebuilt from the table at start;
 * the gateways watch it (gateway/webhooks.ts).
 */
export const webhooksFeature = defineFeature({
  name: 'webhooks',
  routes: webhookRoutes,
  permissions: webhookPermissions.list,
  configKinds: (ctx) => [webhookConfigKind(ctx)],
  async service(ctx) {
    const kv = await openWebhookBucket(ctx.nc, ctx.names)
    const store = webhookStore(ctx.db)
    const log = ctx.log.child({ mod: 'webhooks' })
    await syncWebhookBucket(kv, store, log)
    const invoke = {
      nc: ctx.nc,
      names: ctx.names,
      config: ctx.config,
      enqueue: ctx.jobs.enqueue,
      store: ctx.jobs.store,
      results: ctx.jobs.results,
    }
    return {
      routes: webhookHandlers({
        db: ctx.db,
        kv,
        store,
        resources: ctx.resources,
        invoke,
        config: ctx.config,
        box: createSecretBox(ctx.config.ENCRYPTION_KEY, previousKeys(ctx.config.ENCRYPTION_KEY_PREVIOUS)),
        log,
      }),
    }
  },
})
