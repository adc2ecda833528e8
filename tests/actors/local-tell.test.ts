import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { Type as T } from '@sinclair/typebox'
import t from 'tap'
import { defineActor } from '../../actors/runtime/define-actor.ts'
import { startActorHost } from '../../actors/runtime/host.ts'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'
import { provisionActors } from '../../actors/runtime/provision.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Messages told to a host in-process (ActorHost.tell): handled on the key's chain with the state
 * written before the turn counts as done, without a message in the mailbox stream; and handed to
 * the stream whenever they are not committed in-process (a handler that keeps failing, a host that
 * stops with them queued), so none is lost while the host runs.
 */
const tally = {
  type: 'tally',
  partitions: 4,
  messages: {
    add: T.Object(
      { n: T.Integer({ minimum: 1 }), slow_ms: T.Optional(T.Integer({ minimum: 0 })) },
      { additionalProperties: false },
    ),
  },
} as const satisfies ActorProtocol

interface Tally {
  seen: number[]
}

t.test('told messages: in-process, state before done, handed to the stream when not committed', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const nc = env.platform.nc
  const names = natsNames(env.config.NATS_PREFIX)
  const js = jetstream(nc)
  const jsm = await jetstreamManager(nc)
  await provisionActors(nc, names, { leaseTtlMs: 3000 })
  const states = await new Kvm(nc).open(names.bucket('ACTOR_STATE'))
  const actorsSeq = async () => (await jsm.streams.info(names.stream('ACTORS'))).state.last_seq
  /** Handler runs by host and message, and how many more times the handler of a number fails. */
  const runs: string[] = []
  const failing = new Map<number, number>()
  const actor = (host: string) =>
    defineActor({
      protocol: tally,
      state: { initial: (): Tally => ({ seen: [] }) },
      handlers: {
        async add(ctx, { n, slow_ms }) {
          runs.push(`${host}:${String(n)}`)
          if (slow_ms !== undefined) await new Promise((r) => setTimeout(r, slow_ms))
          const fails = failing.get(n) ?? 0
          if (fails > 0) {
            failing.set(n, fails - 1)
            throw new Error(`add ${String(n)} fails`)
          }
          ctx.setState({ seen: [...ctx.state.seen, n] })
        },
      },
    })
  const seen = async (key: string): Promise<number[]> => {
    const e = await states.get(`tally.${key}`)
    return e === null || e.length === 0 ? [] : e.json<{ state: Tally }>().state.seen
  }
  const log = createLogger({ level: 'error' })
  const a = await startActorHost({
    nc,
    names,
    nodeId: 'tell-a',
    actors: [actor('a')],
    log,
    leaseTtlMs: 3000,
    ackWaitMs: 2000,
  })
  let aStopped = false
  t.teardown(async () => {
    if (!aStopped) await a.stop()
  })
  await eventually(async () => (a.owned().length === 4 ? true : undefined), 'host a to own the 4 partitions')

  // In-process: handled and written, nothing published to the mailbox stream.
  await sendToActor(js, names, tally, 'k1', 'add', { n: 1 })
  await eventually(async () => ((await seen('k1')).length === 1 ? true : undefined), 'the sent message handled')
  const before = await actorsSeq()
  t.equal(a.tell(tally, 'k1', 'add', { n: 2 }), true, 'a key of a partition this host works is told in-process')
  t.equal(a.tell(tally, 'k1', 'add', { n: 3 }), true)
  t.same(
    await eventually(
      async () => ((await seen('k1')).length === 3 ? seen('k1') : undefined),
      'the told messages written',
    ),
    [1, 2, 3],
    'in order after the delivered one, state written',
  )
  t.equal(await actorsSeq(), before, 'no message went through the mailbox stream')
  t.throws(
    () => a.tell(tally, 'k1', 'add', { n: 0 }),
    { status: 422, code: 'actor.invalid_message' },
    'an invalid message is refused as a send refuses it',
  )
  t.equal(
    a.tell({ ...tally, type: 'other' }, 'k1', 'add', { n: 4 }),
    false,
    'an actor type this host does not run: not told (the caller sends it)',
  )

  // Told durably (a sender that answers its caller afterwards): settled once the state is written.
  const durable = a.tellDurably(tally, 'k1', 'add', { n: 4 })
  t.ok(durable !== null, 'taken in-process')
  await durable
  t.same(await seen('k1'), [1, 2, 3, 4], 'settled with the state written')
  t.equal(await actorsSeq(), before, 'still nothing through the mailbox stream')
  t.equal(a.tellDurably({ ...tally, type: 'other' }, 'k1', 'add', { n: 4 }), null, 'not taken: the caller sends it')

  // A handler that fails its three in-place attempts: the message then goes to the mailbox
  // stream, whose delivery (the failure gone by then) is handled once.
  failing.set(5, 3)
  t.equal(a.tell(tally, 'k2', 'add', { n: 5 }), true)
  await eventually(
    async () => ((await actorsSeq()) > before ? true : undefined),
    'the failing told message handed to the stream',
  )
  t.same(
    await eventually(
      async () => ((await seen('k2')).length > 0 ? seen('k2') : undefined),
      'the handed-off message handled from the stream',
    ),
    [5],
    'handled once, from the stream',
  )
  t.equal(runs.filter((r) => r === 'a:5').length, 4, 'three in-place attempts, then the delivery from the stream')
  // told durably, it settles once stored in the stream
  failing.set(6, 3)
  const seqBefore = await actorsSeq()
  await a.tellDurably(tally, 'k2b', 'add', { n: 6 })
  t.ok(
    (await actorsSeq()) > seqBefore,
    'a durable tell that was not committed in-process settles once stored in the stream',
  )

  // A host that stops with told messages queued behind a slow turn hands them to the stream: a
  // host that takes the partition over handles each once.
  t.equal(a.tell(tally, 'k3', 'add', { n: 10, slow_ms: 300 }), true)
  t.equal(a.tell(tally, 'k3', 'add', { n: 11 }), true)
  t.equal(a.tell(tally, 'k3', 'add', { n: 12 }), true)
  await eventually(async () => (runs.includes('a:10') ? true : undefined), 'the slow turn started')
  aStopped = true
  await a.stop()
  t.equal(a.tell(tally, 'k3', 'add', { n: 13 }), false, 'a stopped host tells nothing')
  // sent to the stream while no host works the partition: a host taking it over must not let a
  // told message overtake them (it tells only once it has caught up with its mailbox)
  for (const n of [20, 21, 22]) await sendToActor(js, names, tally, 'k5', 'add', { n })
  const b = await startActorHost({
    nc,
    names,
    nodeId: 'tell-b',
    actors: [actor('b')],
    log,
    leaseTtlMs: 3000,
    ackWaitMs: 2000,
  })
  t.teardown(() => b.stop())
  await eventually(async () => (b.owned().length === 4 ? true : undefined), 'host b to own the 4 partitions')
  // as a sender does: told when taken, sent otherwise
  await (b.tellDurably(tally, 'k5', 'add', { n: 23 }) ?? sendToActor(js, names, tally, 'k5', 'add', { n: 23 }))
  t.same(
    await eventually(async () => ((await seen('k5')).length === 4 ? seen('k5') : undefined), 'k5 handled'),
    [20, 21, 22, 23],
    'the messages sent before the takeover first, the told one after them',
  )
  const k3 = await eventually(async () => {
    const s = await seen('k3')
    return s.length >= 3 ? s : undefined
  }, 'the queued told messages handled by the next host')
  t.same(k3, [10, 11, 12], 'the slow turn committed by its host, the two queued behind it by the next one, once each')
  t.same(
    runs.filter((r) => /:1[0-2]$/.test(r)),
    ['a:10', 'b:11', 'b:12'],
    'each ran once: the stopping host finished its turn and handed the rest over',
  )
})
