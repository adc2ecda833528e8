import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { Type as T } from '@sinclair/typebox'
import t from 'tap'
import { ACTOR_FACTORIES } from '../../src/features.ts'
import { chatProtocol } from '../../actors/protocols/chat.ts'
import { defineActor } from '../../actors/runtime/define-actor.ts'
import { startActorHost } from '../../actors/runtime/host.ts'
import { leaseMargin } from '../../actors/runtime/leases.ts'
import { consumerName } from '../../actors/runtime/mailbox.ts'
import { decodeEnvelope, encodeEnvelope } from '../../actors/runtime/protocol.ts'
import type { ActorProtocol } from '../../schemas/actor-protocol.ts'
import { provisionActors } from '../../actors/runtime/provision.ts'
import { mailboxSubject, sendToActor } from '../../actors/runtime/send.ts'
import { partitionOf } from '../../actors/runtime/hash.ts'
import { dueTimers } from '../../actors/runtime/timers.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * Actors as declarations: a protocol a sender can import without the implementation, named
 * messages on the wire (`{ m, p }`), one handler per message and per timer, and the host's parts
 * importable on their own. The guarantees under kill -9 are in runtime.test.ts.
 */
const ROOT = join(import.meta.dirname, '..', '..')

t.test('a protocol file imports only typebox and schemas/', async (t) => {
  const protocols = readdirSync(join(ROOT, 'actors', 'protocols'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `actors/protocols/${f}`)
  t.ok(protocols.includes('actors/protocols/chat.ts'), 'the protocols live in actors/protocols/')
  for (const file of [...protocols, 'tests/actors/counter-protocol.ts']) {
    const src = readFileSync(join(ROOT, file), 'utf8')
    // type imports too: the group is a leaf, so a sender imports nothing else through it
    const specs = [...src.matchAll(/^import\s[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map((m) => m[1] as string)
    t.ok(specs.length > 0, `${file} has imports`)
    t.same(
      specs.filter(
        (s) => !s.startsWith('@sinclair/typebox') && !/(^|\/)schemas\//.test(s) && !/^\.\/[^/]+\.ts$/.test(s),
      ),
      [],
      `${file}: no import beyond typebox, schemas/ and the other protocols`,
    )
  }
  t.equal(chatProtocol.type, 'chat')
  t.same(Object.keys(chatProtocol.messages).sort(), ['ended', 'send'])
})

t.test('the envelope, decoded against the protocol', async (t) => {
  const proto = {
    type: 'p',
    partitions: 2,
    messages: { add: T.Object({ n: T.Integer() }) },
  } as const satisfies ActorProtocol
  const enc = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v))
  t.same(decodeEnvelope(proto, enc(encodeEnvelope('add', { n: 2 }))), { ok: true, name: 'add', payload: { n: 2 } })
  t.match(decodeEnvelope(proto, enc({ m: 'sub', p: { n: 2 } })), { ok: false, reason: /unknown p message "sub"/ })
  t.match(decodeEnvelope(proto, enc({ m: 'add', p: { n: 'x' } })), { ok: false, reason: /does not match/ })
  t.match(
    decodeEnvelope(proto, enc({ n: 2 })),
    { ok: false, reason: /not an actor envelope/ },
    'a bare payload (the old wire form) is refused',
  )
  t.match(decodeEnvelope(proto, enc('{')), { ok: false, reason: /not JSON/ })
  t.match(
    decodeEnvelope(proto, enc({ m: 'toString', p: {} })),
    { ok: false, reason: /unknown/ },
    'inherited names are not messages',
  )
})

t.test("the host's parts are importable functions", async (t) => {
  t.same(dueTimers({ state: null, timers: { a: 100, b: 300, c: 200 } }, 200).sort(), ['a', 'c'])
  t.equal(leaseMargin(3000, 500), 1000)
  t.equal(leaseMargin(600, 500), 500, 'never less than a tick')
  t.equal(consumerName('chat', 7), 'chat-p007')
})

t.test('defineActor refuses a declaration that does not fit its protocol', async (t) => {
  const proto = {
    type: 'two',
    partitions: 2,
    messages: { a: T.Object({}), b: T.Object({}) },
  } as const satisfies ActorProtocol
  t.throws(
    () =>
      // @ts-expect-error -- the handler of `b` is missing, which the type system reports too
      defineActor({ protocol: proto, state: { initial: () => ({}) }, handlers: { a: async () => undefined } }),
    /no handler for b/,
  )
  t.throws(
    () =>
      defineActor({
        protocol: { ...proto, type: 'Bad.Type' },
        state: { initial: () => ({}) },
        handlers: { a: async () => undefined, b: async () => undefined },
      }),
    /lower-case/,
  )
})

t.test(
  'the host process runs the chat, schedule, db-trigger and pool actors (the features contribute them)',
  async (t) => {
    t.equal(ACTOR_FACTORIES.length >= 1, true)
    const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
    const nc = env.platform.nc
    const platform = {
      nc,
      js: jetstream(nc),
      names: natsNames(env.config.NATS_PREFIX),
      config: env.config,
      log: createLogger({ level: 'warn' }),
    }
    const actors = await Promise.all(ACTOR_FACTORIES.map((make) => make(platform)))
    t.same(actors.map((a) => a.protocol.type).sort(), ['chat', 'db-trigger', 'pool', 'schedule'])
    t.equal(
      actors.find((a) => a.protocol.type === 'chat')?.protocol,
      chatProtocol,
      'built on the protocol senders import',
    )
  },
)

t.test('named messages and timers on a host: dispatch by name, the wire form, refusals', async (t) => {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const nc = env.platform.nc
  const names = natsNames(env.config.NATS_PREFIX)
  const js = jetstream(nc)
  const jsm = await jetstreamManager(nc)
  await provisionActors(nc, names, { leaseTtlMs: 3000 })
  const ledger = {
    type: 'ledger',
    partitions: 4,
    messages: {
      deposit: T.Object({ amount: T.Integer({ minimum: 1 }) }, { additionalProperties: false }),
      withdraw: T.Object({ amount: T.Integer({ minimum: 1 }) }, { additionalProperties: false }),
      close: T.Object({ after_ms: T.Integer({ minimum: 0 }) }, { additionalProperties: false }),
    },
  } as const satisfies ActorProtocol
  interface Ledger {
    balance: number
    log: string[]
    closed: boolean
  }
  const actor = defineActor({
    protocol: ledger,
    state: { initial: (): Ledger => ({ balance: 0, log: [], closed: false }) },
    handlers: {
      async deposit(ctx, { amount }) {
        ctx.setState({
          ...ctx.state,
          balance: ctx.state.balance + amount,
          log: [...ctx.state.log, `+${String(amount)}`],
        })
      },
      async withdraw(ctx, { amount }) {
        ctx.setState({
          ...ctx.state,
          balance: ctx.state.balance - amount,
          log: [...ctx.state.log, `-${String(amount)}`],
        })
      },
      async close(ctx, { after_ms }) {
        ctx.setTimer('close', after_ms)
      },
    },
    timers: {
      async close(ctx) {
        ctx.setState({ ...ctx.state, closed: true, log: [...ctx.state.log, 'closed'] })
      },
    },
  })
  await t.rejects(
    sendToActor(js, names, ledger, 'acct-1', 'transfer' as 'deposit', { amount: 1 }),
    { status: 422, code: 'actor.unknown_message' },
    'an unknown message name is refused on send',
  )
  await t.rejects(
    sendToActor(js, names, ledger, 'acct-1', 'withdraw', { amount: 0 }),
    { status: 422, code: 'actor.invalid_message' },
    "the payload is checked against that message's schema",
  )

  // sent before any host runs, so it waits in the work-queue stream as it went on the wire
  await sendToActor(js, names, ledger, 'acct-1', 'deposit', { amount: 5 }, { msgId: 'dep-1' })
  const wire = await jsm.streams.getMessage(names.stream('ACTORS'), {
    last_by_subj: mailboxSubject(names, 'ledger', partitionOf('acct-1', 4), 'acct-1'),
  })
  t.same(wire?.json(), { m: 'deposit', p: { amount: 5 } }, 'the wire carries the message name')

  const host = await startActorHost({
    nc,
    names,
    nodeId: 'in-test',
    actors: [actor],
    log: createLogger({ level: 'warn' }),
    leaseTtlMs: 3000,
    ackWaitMs: 2000,
  })
  t.teardown(() => host.stop())
  await eventually(async () => (host.owned().length === 4 ? true : undefined), 'the host to own the 4 partitions')
  await sendToActor(js, names, ledger, 'acct-1', 'withdraw', { amount: 2 })
  await sendToActor(js, names, ledger, 'acct-1', 'deposit', { amount: 10 })
  await sendToActor(js, names, ledger, 'acct-1', 'close', { after_ms: 100 })

  const states = await new Kvm(nc).open(names.bucket('ACTOR_STATE'))
  const final = await eventually(async () => {
    const e = await states.get('ledger.acct-1')
    const s = e === null || e.length === 0 ? undefined : e.json<{ state: Ledger; timers: Record<string, number> }>()
    return s?.state.closed === true ? s : undefined
  }, 'the ledger to close')
  t.same(
    final.state,
    { balance: 13, log: ['+5', '-2', '+10', 'closed'], closed: true },
    'each message ran its own handler, in order, then the named timer',
  )
  t.same(final.timers, {}, 'a fired timer is cleared')

  // Messages that reach the mailbox without going through sendToActor are dead-lettered.
  const raw = async (key: string, body: unknown) =>
    js.publish(mailboxSubject(names, 'ledger', partitionOf(key, 4), key), JSON.stringify(body))
  await raw('acct-2', { m: 'transfer', p: { amount: 1 } })
  await raw('acct-3', { amount: 1 })
  for (const [key, why] of [
    ['acct-2', /unknown ledger message "transfer"/],
    ['acct-3', /not an actor envelope/],
  ] as const) {
    const dead = await eventually(
      async () =>
        (await jsm.streams
          .getMessage(names.stream('DLQ'), { last_by_subj: names.subject(`dlq.actor.ledger.${key}`) })
          .catch(() => null)) ?? undefined,
      `${key} in the DLQ`,
    )
    t.match(dead.header.get('X-Error'), why)
  }
})
