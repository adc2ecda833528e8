import { randomUUID } from 'node:crypto'
import type { ActorFactory } from '../../actors/runtime/define-actor.ts'
import { startActorHost } from '../../actors/runtime/host.ts'
import { actorPartitionsOwned, onScrape } from '../platform/metrics.ts'
import type { Infrastructure } from './infrastructure.ts'
import type { Lifecycle } from './lifecycle.ts'

/** The actors role: a host for the partitions of every actor type the features contribute (`factories`). */
export async function startActorRole(
  infra: Infrastructure,
  factories: readonly ActorFactory[],
  life: Lifecycle,
): Promise<void> {
  const { config, log } = infra
  const platform = {
    nc: infra.nc,
    js: infra.js,
    names: infra.names,
    config,
    log,
    ...(infra.localJobs === undefined ? {} : { localJobs: infra.localJobs }),
  }
  const host = await startActorHost({
    nc: infra.nc,
    names: infra.names,
    nodeId: randomUUID().slice(0, 8),
    actors: await Promise.all(factories.map((make) => make(platform))),
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
  life.onStop(
    onScrape(() => {
      // owned() names `<type>.<partition>`; the gauge counts per type (the partition is not a label)
      for (const p of host.owned()) actorPartitionsOwned.inc({ actor_type: p.slice(0, p.lastIndexOf('.')) })
    }),
  )
}
