import { jetstream } from '@nats-io/jetstream'
import type { Msg } from '@nats-io/transport-node'
import t from 'tap'
import { EXECUTION_EVENT_SCHEMA, type ExecutionEvent } from '../../schemas/job.ts'
import { loadPrincipal } from '../../src/auth/principal.ts'
import { eventRelays } from '../../src/events/relay.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { natsNames } from '../../src/platform/nats-names.ts'
import { EVENT_HEADER, newChannelId } from '../../src/streaming/channel.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { eventually } from '../helpers/eventually.ts'

/*
 * The relay behind `GET /api/v1/events/stream` on its own, with a heartbeat of 100 ms: what it
 * publishes on its channel (only the events the caller may see), and how a stream without a
 * natural end ends — nobody listens any more, the caller's principal no longer resolves, shutdown.
 */
const decoder = new TextDecoder()

t.test('the relay: visible events only; ends when unheard, when the caller is disabled, at shutdown', async (t) => {
  const env = await startTestPlatform(t)
  const nc = env.platform.nc
  const names = natsNames(env.config.NATS_PREFIX)
  const user = await env.createUser('relay-user@test.local')
  const caller = { sub: user.id, via: 'jwt' as const }
  const db = env.platform.db
  const resources = env.platform.resources
  if (db === undefined || resources === undefined) throw new Error('the test platform runs the resources role')
  const relays = eventRelays({
    nc,
    js: jetstream(nc),
    names,
    db,
    resources,
    log: createLogger({ level: 'silent' }),
    reconnectWindowMs: 100,
    heartbeatMs: 100,
  })

  /** What the relay publishes on a channel, and a gateway that says it relays the channel. */
  const channelOf = (listening: boolean) => {
    const channel = newChannelId()
    const got: { event: string; data: unknown }[] = []
    const sub = nc.subscribe(names.subject(`sse.in.${channel}`), {
      callback: (_e, m: Msg) => {
        got.push({ event: m.headers?.get(EVENT_HEADER) ?? '', data: JSON.parse(decoder.decode(m.data)) as unknown })
      },
    })
    const gw = listening
      ? nc.subscribe(names.subject(`sse.listeners.${channel}`), {
          callback: (_e, m: Msg) => {
            m.respond('1')
          },
        })
      : undefined
    t.teardown(() => {
      sub.unsubscribe()
      gw?.unsubscribe()
    })
    return { channel, got }
  }
  const event = (over: Partial<ExecutionEvent>): ExecutionEvent => ({
    schema: EXECUTION_EVENT_SCHEMA,
    execution_id: '00000000-0000-4000-8000-000000000001',
    revision: 1,
    pool: 'fn',
    kind: 'function',
    namespace: 'relay',
    name: 'someone-elses',
    status: 'completed',
    attempt: 1,
    user_id: env.adminId,
    trigger_type: 'api',
    trigger_id: 'runtime-api',
    chat_id: null,
    parent_id: null,
    error: null,
    created_at: new Date().toISOString(),
    started_at: null,
    finished_at: null,
    duration_ms: null,
    ...over,
  })
  const publish = (e: ExecutionEvent) =>
    nc.publish(names.subject(`events.execution.${e.namespace}.${e.name}.${e.status}`), JSON.stringify(e))

  // 1. visible events only, heartbeats between them
  const heard = channelOf(true)
  relays.start(await loadPrincipal(db, caller), caller, 'relay.>', heard.channel)
  await nc.flush()
  publish(event({}))
  publish(event({ name: 'mine', user_id: user.id }))
  publish(event({ namespace: 'other', name: 'mine', user_id: user.id }))
  await eventually(
    async () =>
      heard.got.some((g) => g.event === 'heartbeat') && heard.got.some((g) => g.event === 'execution')
        ? true
        : undefined,
    'an execution and a heartbeat',
  )
  const executions = heard.got.filter((g) => g.event === 'execution').map((g) => g.data as ExecutionEvent)
  t.same(
    executions.map((e) => `${e.namespace}/${e.name}`),
    ['relay/mine'],
    "its own run within the filter; not another's, not outside the filter",
  )

  // 2. the caller is disabled: the next heartbeat ends the stream with the reason
  await env.sql('update users set is_active = false where id = $1', [user.id])
  await eventually(async () => (heard.got.some((g) => g.event === 'error') ? true : undefined), 'the error event')
  t.match(heard.got.find((g) => g.event === 'error')?.data, { code: 'auth.user_inactive' })
  await eventually(async () => (relays.size === 0 ? true : undefined), 'the relay stopped')
  await env.sql('update users set is_active = true where id = $1', [user.id])

  // 3. nobody relays the channel (no gateway answers): the relay stops by itself, quietly
  const unheard = channelOf(false)
  relays.start(await loadPrincipal(db, caller), caller, '>', unheard.channel)
  t.equal(relays.size, 1)
  await eventually(async () => (relays.size === 0 ? true : undefined), 'the unheard relay stopped')
  t.notOk(
    unheard.got.some((g) => g.event === 'error'),
    'no error event: nobody is there to read it',
  )

  // 4. shutdown ends the live ones with stream.unavailable (the client reconnects elsewhere)
  const last = channelOf(true)
  relays.start(await loadPrincipal(db, caller), caller, '>', last.channel)
  await relays.stopAll()
  t.equal(relays.size, 0)
  await eventually(async () => (last.got.some((g) => g.event === 'error') ? true : undefined), 'the shutdown event')
  t.match(last.got.find((g) => g.event === 'error')?.data, { code: 'stream.unavailable' })
})
