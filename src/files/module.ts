import { defineFeature } from '../api/feature.ts'
import { openBlobStore } from '../platform/blob-store.ts'
import { fileHandlers, publicBase } from './handlers.ts'
import { iconResolver } from './icons.ts'
import { registerRecordDecorator } from '../resources/decorate.ts'
import { registerSpecCheck } from '../resources/validation.ts'
import { filterCapCheck } from './filter-cap.ts'
import { fileRoutes } from './routes.ts'
import { startBlobSweeper } from './sweeper.ts'
import { registerFileTools } from './tools.ts'

/*
 * Collections' files: the runtime file endpoints and the blob sweeper
 * (service role); the agent file tools register themselves with the chat tool slot (tools.ts).
 * The collection kind itself is src/kinds/collection/.
 */
registerFileTools()

export const filesFeature = defineFeature({
  name: 'files',
  routes: fileRoutes,
  service: (ctx) => {
    const blobs = () => openBlobStore(ctx.nc, ctx.names)
    const log = ctx.log.child({ mod: 'files' })
    const invoke = {
      nc: ctx.nc,
      names: ctx.names,
      config: ctx.config,
      enqueue: ctx.jobs.enqueue,
      store: ctx.jobs.store,
      results: ctx.jobs.results,
    }
    const sweeper = startBlobSweeper({ db: ctx.db, blobs, log, everyMs: ctx.config.FILES_SWEEP_SECONDS * 1000 })
    const unregister = registerRecordDecorator(
      iconResolver({ db: ctx.db, config: ctx.config, resources: ctx.resources, base: publicBase(ctx.config) }),
    )
    const unregisterCap = registerSpecCheck(filterCapCheck(ctx.config))
    return {
      routes: fileHandlers({ db: ctx.db, config: ctx.config, resources: ctx.resources, blobs, invoke, log }),
      stop: async () => {
        unregister()
        unregisterCap()
        await sweeper.stop()
      },
    }
  },
})
