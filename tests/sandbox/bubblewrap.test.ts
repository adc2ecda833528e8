import t from 'tap'
import { bubblewrapDriver } from '../../sandbox/drivers/bubblewrap.ts'
import { readServices } from '../setup/services.ts'
import { runConformance } from './conformance.ts'

/* The conformance suite (hostile functions included) against the bubblewrap driver. */
const services = readServices()
const port = (url: string): number => Number(new URL(url).port)

await runConformance(t, async () => bubblewrapDriver({ python: '/usr/bin/python3' }), {
  hostPorts: [port(services.natsUrl), port(services.pgBase), 4222, 5432],
  secretEnv: ['SECRET_KEY', 'ENCRYPTION_KEY', 'DATABASE_URL', 'NATS_URL', 'USER', 'LOGNAME', 'NODE_OPTIONS'],
})
