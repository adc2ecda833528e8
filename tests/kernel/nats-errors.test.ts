import { randomBytes } from 'node:crypto'
import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { classifyNatsError, isCasConflict } from '../../src/kernel/nats-errors.ts'
import { readServices } from '../setup/services.ts'

/* NATS failures are classified by the client's error classes, against the real server. */
const services = readServices()
const prefix = `natserr_${randomBytes(4).toString('hex')}`
const nc = await connect({ servers: services.natsUrl })
t.teardown(async () => {
  await (await jetstreamManager(nc)).streams.delete(`KV_${prefix}`).catch(() => undefined)
  await nc.close()
})

const failureOf = (p: Promise<unknown>) =>
  p.then(
    () => 'answered',
    (err: unknown) => classifyNatsError(err),
  )

t.test('a request nobody serves is no_responders', async (t) => {
  t.equal(await failureOf(nc.request(`${prefix}.nobody`, 'x', { timeout: 5_000 })), 'no_responders')
})

t.test('a request a subscriber never answers is timeout', async (t) => {
  const sub = nc.subscribe(`${prefix}.silent`)
  t.teardown(() => sub.unsubscribe())
  t.equal(await failureOf(nc.request(`${prefix}.silent`, 'x', { timeout: 100 })), 'timeout')
})

t.test('a request on a closed connection is closed', async (t) => {
  const other = await connect({ servers: services.natsUrl })
  await other.close()
  t.equal(await failureOf(other.request(`${prefix}.any`, 'x', { timeout: 1_000 })), 'closed')
})

t.test('a KV write with a stale revision is a CAS conflict', async (t) => {
  const kv = await new Kvm(nc).create(prefix)
  const rev = await kv.create('k', 'a')
  await kv.update('k', 'b', rev)
  const err = await kv.update('k', 'c', rev).then(
    () => null,
    (e: unknown) => e,
  )
  t.ok(isCasConflict(err))
  t.equal(classifyNatsError(err), 'cas_conflict')
  t.equal(
    await kv.create('k', 'again').then(
      () => null,
      (e: unknown) => classifyNatsError(e),
    ),
    'cas_conflict',
    'create of an existing key too',
  )
})

t.test('anything else is not a NATS failure', async (t) => {
  t.equal(classifyNatsError(new Error('no responders available (a message, not the class)')), null)
})
