import { chatActorFactory } from '../../actors/chat/actor.ts'
import { chatAbandonedTurnHandler } from './abandoned-turn.ts'
import { startExpiredChatSweep } from './expiry.ts'
import { chatStreamEmitter } from './stream-emitter.ts'
import { defineFeature } from '../feature/define.ts'
import { chatHandlers } from './handlers.ts'
import { chatPermissions } from './service.ts'
import { chatRoutes } from './routes.ts'
import { startToolResultSweep } from './tool-result-sweep.ts'
import { chatTurnExecutor } from './worker.ts'

/*
 * Agents and chats: the chat endpoints, the expired-chat sweep and the tool-result retention sweep
 * (service role), the turn
 * executor of the agent and sub-agent pools and what happens to a turn whose worker was lost
 * (workers role), and the chat actor.
 */
export const chatsFeature = defineFeature({
  name: 'chats',
  routes: chatRoutes,
  actors: [chatActorFactory],
  permissions: chatPermissions.list,
  service: (ctx) => {
    const stopExpiry = startExpiredChatSweep({ db: ctx.db, log: ctx.log }, ctx.config.CHAT_EXPIRY_SWEEP_SECONDS * 1000)
    const stopRetention = startToolResultSweep({
      db: ctx.db,
      log: ctx.log.child({ mod: 'chats' }),
      days: ctx.config.TOOL_RESULT_RETENTION_DAYS,
    })
    return {
      routes: chatHandlers({
        db: ctx.db,
        nc: ctx.nc,
        js: ctx.js,
        names: ctx.names,
        config: ctx.config,
        resources: ctx.resources,
        jobStore: ctx.jobs.store,
        actorsHere: ctx.actorsHere,
        log: ctx.log.child({ mod: 'chats' }),
      }),
      stop: async () => {
        await Promise.all([stopExpiry(), stopRetention()])
      },
    }
  },
  workers(ctx) {
    const turn = chatTurnExecutor({ ...ctx, emitter: chatStreamEmitter(ctx), log: ctx.log.child({ mod: 'turn' }) })
    const abandoned = chatAbandonedTurnHandler(ctx)
    return { executors: { agent: turn, subagent: turn }, onAbandoned: { agent: abandoned, subagent: abandoned } }
  },
})
