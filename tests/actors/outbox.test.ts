import t from 'tap'
import { outbox } from '../../actors/runtime/outbox.ts'
import type { Delivery } from '../../actors/runtime/partition.ts'

/*
 * A send or an ack that throws (the connection closing under the host) must not keep the others of
 * its turn from going out, nor leave `flushed()` pending: the host's tick awaits it before it
 * releases a lease, and a pending one once stopped the host renewing or acquiring any lease.
 */
t.test('a throwing send or ack does not hold back the rest of the turn, nor flushed()', async (t) => {
  const errors: unknown[] = []
  const out = outbox((err) => errors.push(err))
  const done: string[] = []
  const delivery = (name: string, throws: boolean): Delivery =>
    ({
      ack: () => {
        if (throws) throw new Error(`ack ${name} on a closed connection`)
        done.push(`ack ${name}`)
      },
    }) as unknown as Delivery
  out.later(() => {
    throw new Error('publish on a closed connection')
  })
  out.later(() => done.push('send 2'))
  out.ack(delivery('a', true))
  out.ack(delivery('b', false))
  await out.flushed()
  t.same(done, ['send 2', 'ack b'], 'the others went out, sends before acks')
  t.same(
    errors.map((e) => (e as Error).message),
    ['publish on a closed connection', 'ack a on a closed connection'],
    'each failure reached onError',
  )
  await out.flushed()
  t.pass('nothing queued: flushed() resolves at once')
})
