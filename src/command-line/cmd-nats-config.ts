import { Type as T, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { parse } from 'yaml'
import { natsNames } from '../platform/nats-names.ts'
import { writeNatsTopology } from '../platform/nats-topology.ts'
import { optionText, type ParsedArgs } from './args.ts'
import { readSource, type Io } from './io.ts'

/*
 * `nats-config <plan|->`: the nats-server configs and credentials of a hub cluster and a leaf node
 * per region (docs/multi-region.md), written under --dir by src/platform/nats-topology.ts. Local
 * only: no platform, no NATS is contacted.
 */
const Port = T.Integer({ minimum: 1, maximum: 65535 })
const NatsTopologyFile = T.Object(
  {
    prefix: T.Optional(T.String({ description: 'NATS_PREFIX of the installation' })),
    clusterName: T.Optional(T.String()),
    jetStreamDomain: T.Optional(T.String()),
    tls: T.Optional(T.Object({ caFile: T.String(), certFile: T.String(), keyFile: T.String() })),
    hub: T.Array(T.Object({ host: T.String(), clientPort: Port, clusterPort: Port, leafPort: Port }), { minItems: 1 }),
    regions: T.Array(
      T.Object({
        name: T.String({ pattern: '^[A-Za-z0-9-]+$' }),
        host: T.String(),
        clientPort: Port,
        hubLeafAddresses: T.Array(T.String(), { minItems: 1 }),
        events: T.Optional(T.Boolean()),
        monitorPort: T.Optional(Port),
      }),
    ),
  },
  { additionalProperties: false },
)
type NatsTopologyFile = Static<typeof NatsTopologyFile>

export async function natsConfig(a: ParsedArgs, io: Io): Promise<number> {
  const dir = optionText(a, 'dir')
  if (dir === undefined) throw new Error('--dir is required: where the configs and credentials go')
  const raw: unknown = parse(await readSource(a.positional[0] as string))
  if (!Value.Check(NatsTopologyFile, raw)) {
    for (const e of Value.Errors(NatsTopologyFile, raw)) io.err(`  ${e.path || '/'}: ${e.message}\n`)
    throw new Error('the plan does not match its shape (docs/multi-region.md)')
  }
  const plan: NatsTopologyFile = raw
  const { prefix, ...rest } = plan
  const topology = writeNatsTopology({ ...rest, dir, names: natsNames(prefix ?? '') })
  if (plan.tls === undefined)
    io.err('no tls in the plan: connections are not encrypted and the leaf links send their passwords in the clear\n')
  if (optionText(a, 'output') === 'json') {
    io.out(`${JSON.stringify(topology, null, 2)}\n`)
    return 0
  }
  for (const h of topology.hub) io.out(`hub ${h.name}: nats-server -c ${h.confFile}\n`)
  for (const r of topology.regions) io.out(`region ${r.name}: nats-server -c ${r.confFile}\n`)
  io.out(`internal roles: NATS_URL=${topology.hubUrl} NATS_NKEY_FILE=${topology.platformSeedFile}\n`)
  io.out(`events readers on the hub: NATS_NKEY_FILE=${topology.eventsSeedFile}\n`)
  for (const r of topology.regions)
    io.out(`edge gateways of ${r.name}: NATS_URL=${r.clientUrl} NATS_NKEY_FILE=${r.gatewaySeedFile}\n`)
  return 0
}
