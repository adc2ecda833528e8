import { defineFeature } from '../feature/define.ts'
import { checkMailer, createMailer } from './mailer.ts'
import { createRateLimiter, openRateLimits } from './rate-limit.ts'
import { identityRoutes } from './routes.ts'
import { EXCHANGE_PERMISSION, identityHandlers } from './service.ts'

/* Logging in: the /auth routes, emailed codes, refresh families, token exchange, login rate limits. */
export const identityFeature = defineFeature({
  name: 'identity',
  routes: identityRoutes,
  permissions: [
    {
      permission: EXCHANGE_PERMISSION,
      description: 'exchange external identities for tokens (trusted identity providers)',
    },
  ],
  // otp modes need SMTP in production: refused before anything starts
  preflight: (config, roles) => {
    if (roles.has('resources')) checkMailer(config)
  },
  async service(ctx) {
    const limiter = createRateLimiter(await openRateLimits(ctx.nc, ctx.names), ctx.config.RATE_LIMIT_WINDOW_SECONDS)
    const mailer = createMailer(ctx.config, ctx.log.child({ mod: 'mail' }))
    return {
      routes: identityHandlers({
        db: ctx.db,
        config: ctx.config,
        mailer,
        limiter,
        log: ctx.log.child({ mod: 'identity' }),
      }),
    }
  },
})
