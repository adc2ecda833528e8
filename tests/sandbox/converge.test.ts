import t from 'tap'
import { poolActor } from '../../actors/pool/actor.ts'
import type { ActorContext } from '../../actors/runtime/define-actor.ts'
import { initialPoolDesired, type PoolDesired } from '../../schemas/sandbox-pool.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { plan, shareOf, type Applied } from '../../sandbox/converge.ts'

/*
 * The pure parts of the pool actors: the pool actor's handlers (what a message does to the desired
 * state), the split of a target over live processes, and the plan a worker process makes for one
 * desired state. The end-to-end behaviour is tests/functions/pool-actors.test.ts.
 */

/** Runs one message through the actor's handler as the host would, returning the next state. */
async function send(
  state: PoolDesired,
  name: 'scale' | 'reload' | 'restart',
  payload: Record<string, unknown>,
): Promise<PoolDesired> {
  let next = state
  const ctx: ActorContext<unknown> = {
    key: 'sandbox',
    state,
    setState: (s) => {
      next = s as PoolDesired
    },
    setTimer: () => undefined,
    clearTimer: () => undefined,
    fence: 1,
    log: createLogger({ level: 'silent' }),
  }
  await poolActor().handle(ctx, name, payload)
  return next
}

t.test('the pool actor: every message bumps seq once; a repeated request id changes nothing', async (t) => {
  let s = initialPoolDesired()
  s = await send(s, 'scale', { request_id: 'a', target: 5 })
  t.match(s, { seq: 1, target: 5, generation: 0, requests: [{ id: 'a', seq: 1, op: 'scale' }] })
  t.same(await send(s, 'scale', { request_id: 'a', target: 9 }), s, 'a redelivered scale is ignored')
  s = await send(s, 'reload', { request_id: 'b' })
  t.match(s, { seq: 2, target: 5, generation: 1 })
  t.notOk('packages_dir' in s, 'a reload without a package set leaves it unset')
  s = await send(s, 'reload', { request_id: 'c', packages_dir: '/p/abc' })
  t.match(s, { seq: 3, generation: 2, packages_dir: '/p/abc' })
  s = await send(s, 'restart', { request_id: 'd', name: 'bwrap-1' })
  t.same(s.restarts, [{ name: 'bwrap-1', seq: 4 }])
  for (let i = 0; i < 40; i++) s = await send(s, 'restart', { request_id: `r${String(i)}`, name: `n${String(i)}` })
  t.equal(s.requests.length, 32, 'the last 32 requests are kept')
  t.equal(s.restarts.length, 32, 'and the last 32 restarts')
  t.equal(s.seq, 44)
})

t.test('the target is split the same way by every process', async (t) => {
  const nodes = ['c', 'a', 'b']
  t.same(
    ['a', 'b', 'c'].map((me) => shareOf(7, nodes, me)),
    [3, 2, 2],
  )
  t.equal(shareOf(7, ['a', 'b'], 'c'), 2, 'a process not listed yet counts itself')
  t.equal(shareOf(4, [], 'a'), 4)
  t.equal(shareOf(0, nodes, 'a'), 0)
})

const desired = (over: Partial<PoolDesired>): PoolDesired => ({ ...initialPoolDesired(), ...over })
const applied = (over: Partial<Applied>): Applied => ({
  seq: 3,
  generation: 1,
  share: 2,
  packages: undefined,
  reloads: 1,
  ...over,
})

t.test('a process that just started takes its share and the generation as it is, without recycling', async (t) => {
  const d = desired({
    seq: 3,
    target: 4,
    generation: 1,
    restarts: [{ name: 'x', seq: 2 }],
    requests: [{ id: 'r', seq: 3, op: 'reload' }],
  })
  const p = plan(d, applied({ seq: -1, generation: 0, share: null }), 2, undefined)
  t.match(p, { reload: false, scale: 2, restarts: [] })
  t.notOk('packages' in p)
  const withPackages = plan(
    { ...d, packages_dir: '/p/new' },
    applied({ seq: -1, generation: 0, share: null }),
    2,
    '/p/old',
  )
  t.match(withPackages, { packages: '/p/new', reload: true }, 'members started with another package set are recycled')
  t.match(plan({ ...d, packages_dir: '/p/old' }, applied({ seq: -1 }), 2, '/p/old'), { reload: false })
})

t.test('a new generation recycles once; the same state again does nothing', async (t) => {
  const d = desired({ seq: 4, target: 4, generation: 2, requests: [{ id: 'r', seq: 4, op: 'reload' }] })
  t.match(
    plan(d, applied({}), 2, undefined),
    { requestIds: ['r'], reload: true, scale: null, restarts: [] },
    'no scale: the share did not move',
  )
  t.match(plan(d, applied({ seq: 4, generation: 2 }), 2, undefined), { requestIds: [], reload: false, scale: null })
})

t.test('scale when asked or when the share moved', async (t) => {
  const d = desired({ seq: 4, target: 4, generation: 1, requests: [{ id: 's', seq: 4, op: 'scale' }] })
  t.match(plan(d, applied({}), 2, undefined), { scale: 2 }, 'asked, same share: scaled (the answer needs the numbers)')
  t.match(
    plan({ ...d, seq: 3 }, applied({}), 4, undefined),
    { scale: 4, requestIds: [] },
    'a process left: the share grew',
  )
  t.match(plan({ ...d, target: null }, applied({ share: null }), null, undefined), { scale: null })
})

t.test('restarts newer than what was applied, and the package set compared per pool', async (t) => {
  const d = desired({
    seq: 6,
    generation: 1,
    restarts: [
      { name: 'old', seq: 3 },
      { name: 'new', seq: 5 },
    ],
    requests: [],
  })
  t.same(plan(d, applied({}), 2, undefined).restarts, ['new'])
  const p = desired({ seq: 4, generation: 1, packages_dir: '/p/a' })
  t.notOk(
    'packages' in plan(p, applied({ packages: '/p/a' }), 2, '/p/b'),
    'this pool applied /p/a already: another pool naming /p/b does not make it reload',
  )
})
