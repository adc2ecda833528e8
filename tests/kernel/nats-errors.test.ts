import { randomBytes } from 'node:crypto'
import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { classifyNatsError, isCasConflict, isNatsUnavailable } from '../../src/kernel/nats-errors.ts'
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

t.test('NATS failing under a handler is "unavailable" (a 503), a request error or a CAS conflict is not', async (t) => {
  const failed = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    )
  t.ok(isNatsUnavailable(await failed(nc.request(`${prefix}.nobody`, 'x', { timeout: 5_000 }))), 'no responders')
  const sub = nc.subscribe(`${prefix}.silent2`)
  t.teardown(() => sub.unsubscribe())
  const timeout = await failed(nc.request(`${prefix}.silent2`, 'x', { timeout: 100 }))
  t.ok(isNatsUnavailable(timeout), 'no answer in time')
  t.ok(isNatsUnavailable(new Error('wrapped', { cause: timeout })), 'found through cause')
  // the JetStream API's own 503 (a stream electing a leader); a 404 (no such stream) is the request's fault
  const jsm = await jetstreamManager(nc)
  const missing = await failed(jsm.streams.info(`${prefix}_NO_SUCH_STREAM`))
  t.notOk(isNatsUnavailable(missing), 'a stream that does not exist is not an outage')
  t.notOk(isNatsUnavailable(new Error('a bug')), 'any other error is not')
})
