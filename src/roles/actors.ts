import { randomUUID } from 'node:crypto'
import { buildActors } from '../../actors/index.ts'
import { startActorHost } from '../../actors/runtime/host.ts'
import type { Infrastructure } from './infrastructure.ts'
import type { Lifecycle } from './lifecycle.ts'

/** The actors role: a host for the partitions of every actor type listed in actors/index.ts. */
export async function startActorRole(infra: Infrastructure, life: Lifecycle): Promise<void> {
  const { config, log } = infra
  const host = await startActorHost({
    nc: infra.nc,
    names: infra.names,
    nodeId: randomUUID().slice(0, 8),
    actors: await buildActors({
      nc: infra.nc,
      js: infra.js,
      names: infra.names,
      config,
      log,
      ...(infra.localJobs === undefined ? {} : { localJobs: infra.localJobs }),
    }),
    log: log.child({ mod: 'actors' }),
    leaseTtlMs: config.ACTOR_LEASE_TTL_SECONDS * 1000,
    ackWaitMs: config.ACTOR_ACK_WAIT_SECONDS * 1000,
    timerMs: config.ACTOR_TIMER_MS,
  })
  // the job workers of this process tell their chat turns' end to this host when it owns the chat
  infra.actorsHere.bind(host)
  life.onStop(() => {
    infra.actorsHere.bind(null)
    return host.stop()
  })
}
