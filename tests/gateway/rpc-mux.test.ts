import t from 'tap'
import { connect, type Msg } from '@nats-io/transport-node'
import { headers as natsHeaders } from '@nats-io/transport-node'
import { RpcMux } from '../../gateway/rpc-mux.ts'
import { readServices } from '../setup/services.ts'

/*
 * The gateway's request/reply over one inbox subscription (gateway/rpc-mux.ts): answers matched to
 * their calls in any order, the connection's inbox prefix, no responders, timeouts swept in order
 * with a late answer ignored, and every call in flight rejected by `failAll`.
 */
const services = readServices()
const nc = await connect({ servers: services.natsUrl, inboxPrefix: '_INBOX_muxtest' })
t.teardown(() => nc.close())
const subject = `t${String(process.pid)}.mux`
const errors = { timeout: () => new Error('timed out'), noResponders: () => new Error('no responders') }
const text = (m: Msg) => new TextDecoder().decode(m.data)
const enc = (s: string) => new TextEncoder().encode(s)

t.test('answers reach their own calls, in whatever order they come', async (t) => {
  const held: Msg[] = []
  const replies: string[] = []
  const sub = nc.subscribe(`${subject}.echo`, {
    callback: (_err, m) => {
      replies.push(m.reply ?? '')
      held.push(m)
      // answer the three in reverse order once all arrived
      if (held.length === 3) for (const h of held.reverse()) h.respond(enc(`re:${text(h)}`))
    },
  })
  t.teardown(() => sub.unsubscribe())
  await nc.flush()
  const mux = new RpcMux(nc, 5_000, errors)
  const got = await Promise.all(['a', 'b', 'c'].map((x) => mux.request(`${subject}.echo`, enc(x), natsHeaders())))
  t.same(got.map(text), ['re:a', 're:b', 're:c'])
  t.ok(
    replies.every((r) => r.startsWith('_INBOX_muxtest.')),
    'the reply subjects use the connection’s inbox prefix',
  )
  t.equal(mux.inFlight, 0)
})

t.test('no responders, a timeout, a late answer ignored, failAll', async (t) => {
  const mux = new RpcMux(nc, 150, errors)
  await t.rejects(mux.request(`${subject}.nobody`, enc('x'), natsHeaders()), { message: 'no responders' })

  let late: Msg | undefined
  const sub = nc.subscribe(`${subject}.slow`, {
    callback: (_err, m) => {
      late = m
    },
  })
  t.teardown(() => sub.unsubscribe())
  await nc.flush()
  await t.rejects(mux.request(`${subject}.slow`, enc('x'), natsHeaders()), { message: 'timed out' })
  t.equal(mux.inFlight, 0, 'the overdue call left the table')
  late?.respond(enc('too late'))
  await nc.flush()
  t.equal(mux.inFlight, 0, 'the late answer is dropped')

  const slow = new RpcMux(nc, 30_000, errors)
  const calls = [1, 2, 3].map(() => slow.request(`${subject}.slow`, enc('x'), natsHeaders()))
  await nc.flush()
  t.equal(slow.inFlight, 3)
  slow.failAll(() => new Error('link down'))
  for (const c of calls) await t.rejects(c, { message: 'link down' })
  t.equal(slow.inFlight, 0)
})
