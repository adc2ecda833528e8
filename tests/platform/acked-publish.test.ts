import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { errors, headers } from '@nats-io/transport-node'
import t from 'tap'
import { ackedPublisher, ackedPublisherOf, createAckedPublisher } from '../../src/platform/acked-publish.ts'
import { isWrongLastSequence } from '../../src/platform/jetstream.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The lean acknowledged publish (src/platform/acked-publish.ts) against the real server: the same
 * PubAck as `js.publish`, the stream's duplicate window on `Nats-Msg-Id`, KV CAS writes a KV client
 * reads back (conflicts classified like `kv.update`'s), no stream → NoRespondersError, no answer →
 * TimeoutError, and many publishes in flight matched to their own answers.
 */
t.test('acked publishes: PubAck, duplicates, KV CAS, no stream, no answer, many in flight', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const nc = env.platform.nc
  const names = natsNames(env.config.NATS_PREFIX)
  const js = jetstream(nc)
  const pub = ackedPublisher(nc)
  t.equal(ackedPublisherOf(js), pub, 'one shared publisher per connection, found from its JetStream client')

  const subject = names.subject('dlq.acked.test')
  const viaClient = await js.publish(subject, 'a', { msgID: 'acked-1' })
  const lean = await pub.publish(subject, 'b', { msgID: 'acked-2' })
  t.equal(lean.stream, viaClient.stream, 'the PubAck names the same stream')
  t.equal(lean.seq, viaClient.seq + 1, 'and the next sequence')
  t.equal(lean.duplicate, false)
  const again = await pub.publish(subject, 'b', { msgID: 'acked-2' })
  t.equal(again.duplicate, true, 'the same Nats-Msg-Id is stored once')
  t.equal(again.seq, lean.seq)

  // KV: expected 0 creates, a stale revision is the CAS conflict kv.update reports
  const bucket = names.bucket('ACKED_TEST')
  const kv = await new Kvm(nc).create(bucket, { history: 1 })
  t.teardown(() => kv.destroy().then(() => undefined))
  const key = `$KV.${bucket}.k`
  const r1 = (await pub.publish(key, 'one', { expectedLastSubjectSequence: 0 })).seq
  t.equal((await kv.get('k'))?.string(), 'one', 'a KV client reads the created entry')
  t.equal((await kv.get('k'))?.revision, r1, 'at the revision the PubAck gave')
  const dupCreate = await pub.publish(key, 'again', { expectedLastSubjectSequence: 0 }).then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(isWrongLastSequence(dupCreate), 'a second create is a CAS conflict')
  const r2 = (await pub.publish(key, 'two', { expectedLastSubjectSequence: r1 })).seq
  const stale = await pub.publish(key, 'three', { expectedLastSubjectSequence: r1 }).then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(isWrongLastSequence(stale), 'a write on a stale revision is a CAS conflict')
  t.equal((await kv.get('k'))?.string(), 'two', 'the refused write changed nothing')
  t.ok(r2 > r1)
  const h = headers()
  h.set('X-Mine', 'kept')
  await pub.publish(key, 'four', { headers: h, expectedLastSubjectSequence: r2 })
  t.equal((await kv.get('k'))?.string(), 'four', 'given headers and the CAS header go together')

  // nothing stores the subject: the server's empty 503
  const noStream = await pub.publish(names.subject('no.stream.here'), 'x').then(
    () => null,
    (err: unknown) => err,
  )
  t.ok(noStream instanceof errors.NoRespondersError, `no stream: ${String(noStream)}`)

  // a subscriber that never answers: a TimeoutError after the publish's own timeout
  const mute = nc.subscribe(names.subject('mute.listener'))
  t.teardown(() => mute.unsubscribe())
  await nc.flush()
  const t0 = performance.now()
  const silent = await pub.publish(names.subject('mute.listener'), 'x', { timeoutMs: 300 }).then(
    () => null,
    (err: unknown) => err,
  )
  const waited = performance.now() - t0
  t.ok(silent instanceof errors.TimeoutError, `no answer: ${String(silent)}`)
  t.ok(waited >= 300 && waited < 2_000, `timed out after ${waited.toFixed(0)} ms (300 ms asked, swept every 250 ms)`)

  // 500 in flight at once, each answered with its own sequence
  const acks = await Promise.all(
    Array.from({ length: 500 }, (_, i) => pub.publish(subject, String(i), { msgID: `many-${String(i)}` })),
  )
  const seqs = new Set(acks.map((a) => a.seq))
  t.equal(seqs.size, 500, 'every publish got its own PubAck')
  const jsm = await jetstreamManager(nc)
  const msgs = await Promise.all(
    acks.slice(0, 5).map(async (a) => (await jsm.streams.getMessage(a.stream, { seq: a.seq }))?.string()),
  )
  t.same(msgs, ['0', '1', '2', '3', '4'], 'each sequence holds what its publish sent')

  // a closed publisher fails what is still pending
  const own = createAckedPublisher(nc)
  const pending = own.publish(names.subject('mute.listener'), 'x')
  own.close()
  t.ok(
    (await pending.then(
      () => null,
      (err: unknown) => err,
    )) instanceof errors.ClosedConnectionError,
    'pending publishes fail on close',
  )
})
