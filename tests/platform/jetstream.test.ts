import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import t from 'tap'
import { isApiNotFound, isWrongLastSequence, publishDurably } from '../../src/platform/jetstream.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The shared JetStream/KV helpers against the real server: CAS conflicts and 404s are recognised
 * by the client's error class and the server's api error code, not by the wording of a message.
 */
t.test('errors classified by JetStreamApiError codes', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const nc = env.platform.nc
  const names = natsNames(env.config.NATS_PREFIX)
  const kv = await new Kvm(nc).create(names.bucket('HELPER_TEST'), { history: 1 })
  t.teardown(() => kv.destroy().then(() => undefined))

  const rev = await kv.create('k', 'a')
  await kv.update('k', 'b', rev)
  const stale = await kv.update('k', 'c', rev).then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(isWrongLastSequence(stale), 'a CAS update on a stale revision is a wrong-last-sequence conflict')
  const dup = await kv.create('k', 'd').then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(isWrongLastSequence(dup), 'a create of an existing key is one too')
  t.notOk(isWrongLastSequence(new Error('wrong last sequence: 3')), 'a plain error that only says so is not')
  t.notOk(isWrongLastSequence(undefined))

  const jsm = await jetstreamManager(nc)
  const missing = await jsm.consumers.delete(names.stream('DLQ'), 'no-such-consumer').then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(isApiNotFound(missing), 'deleting a consumer that does not exist is a 404')
  t.notOk(isWrongLastSequence(missing))
  t.notOk(isApiNotFound(stale))

  const ack = await publishDurably(jetstream(nc), names.subject('dlq.helper.test'), 'x', { msgID: 'helper-1' })
  const again = await publishDurably(jetstream(nc), names.subject('dlq.helper.test'), 'x', { msgID: 'helper-1' })
  t.equal(again.duplicate, true, 'the same msgID is stored once')
  t.equal(again.seq, ack.seq)
})
