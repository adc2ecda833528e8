import { defineFeature } from '../feature/define.ts'
import { usageHandlers, usagePermissions } from './handlers.ts'
import { usageRoutes } from './routes.ts'

/*
 * Usage accounting: the report of tokens and reported cost per day (service role). The recording
 * itself rides with the chat turns' writes (src/chats/transcript.ts) and the adapter's provider
 * calls (src/adapter/via-provider.ts); the daily token budget is checked by both (./budget.ts).
 */
export const usageFeature = defineFeature({
  name: 'usage',
  routes: usageRoutes,
  permissions: usagePermissions.list,
  service: (ctx) => ({ routes: usageHandlers({ db: ctx.db }) }),
})
