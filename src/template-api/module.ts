import { defineFeature } from '../feature/define.ts'
import { templateHandlers, templatePermissions } from './handlers.ts'
import { createTemplateMailer } from './mail.ts'
import { templateRoutes } from './routes.ts'

/* Templates beyond CRUD: by id / by name, render, and send as email. */
export const templateApiFeature = defineFeature({
  name: 'template-api',
  routes: templateRoutes,
  permissions: templatePermissions.list,
  service: (ctx) => ({
    routes: templateHandlers({
      resources: ctx.resources,
      config: ctx.config,
      mailer: createTemplateMailer(ctx.config, ctx.log.child({ mod: 'template-mail' })),
    }),
  }),
})
