import { jetstream } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { provisionActors } from '../../actors/runtime/provision.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { ACTOR_RUNS_TABLE } from './counter-actor.ts'

interface Teardown {
  teardown(fn: () => unknown): void
}

/**
 * What the host-process tests share: a platform without actor hosts of its own (the hosts are child
 * processes, tests/actors/host-process.ts), the counter actor's run table, the actor layout with the
 * file's lease TTL, and the lease and state buckets to look into.
 */
export async function startActorTestbed(t: Teardown, leaseTtlMs: number) {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  await env.sql(ACTOR_RUNS_TABLE)
  const names = natsNames(env.config.NATS_PREFIX)
  const nc = env.platform.nc
  await provisionActors(nc, names, { leaseTtlMs })
  const kvm = new Kvm(nc)
  return {
    env,
    names,
    nc,
    js: jetstream(nc),
    leases: await kvm.open(names.bucket('ACTOR_LEASES')),
    states: await kvm.open(names.bucket('ACTOR_STATE')),
  }
}
