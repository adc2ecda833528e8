import { defineFeature } from '../feature/define.ts'
import { openBlobStore } from '../platform/blob-store.ts'
import { filePermissions } from './access.ts'
import { filterCapCheck } from './filter-cap.ts'
import { fileHandlers, publicBase } from './handlers.ts'
import { iconResolver } from './icons.ts'
import { iconSpecCheck } from './icon-spec-check.ts'
import { fileRoutes } from './routes.ts'
import { startBlobSweeper } from './sweeper.ts'
import { fileToolProvider } from './tools.ts'

/*
 * Collections' files: the runtime file endpoints and the blob sweeper (service role), the agent
 * file tools, the collections' filter cap and the agents' and functions' icons (spec checks) and the records' icon URLs (a record
 * decorator). The collection kind itself is src/kinds/collection/.
 */
export const filesFeature = defineFeature({
  name: 'files',
  routes: fileRoutes,
  tools: [fileToolProvider],
  permissions: filePermissions.list,
  specChecks: ({ config }) => [filterCapCheck(config), iconSpecCheck],
  recordDecorators: (ctx) => [
    iconResolver({ db: ctx.db, config: ctx.config, resources: ctx.resources, base: publicBase(ctx.config) }),
  ],
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
    return {
      routes: fileHandlers({ db: ctx.db, config: ctx.config, resources: ctx.resources, blobs, invoke, log }),
      stop: () => sweeper.stop(),
    }
  },
})
