import { Type as T } from '@sinclair/typebox'
import t from 'tap'
import { createLogger } from '../../src/kernel/log.ts'
import { connectNats } from '../../src/platform/nats.ts'
import { serveQueueRequests } from '../../src/platform/queue-requests.ts'
import { readServices } from '../setup/services.ts'

/*
 * The service side of an actor's requests (src/platform/queue-requests.ts) on the real server: a
 * checked request gets the handler's answer, a malformed one (not JSON, or not the schema) the
 * refusal, a handler that throws no answer at all (the asking actor times out and asks again), and
 * two replicas in the queue group answer each request once.
 */
t.test('queue requests: answered, refused, left unanswered on a failure, one replica each', async (t) => {
  const log = createLogger({ level: 'silent' })
  const nc = await connectNats(readServices().natsUrl, 'queue-requests-test', log)
  t.teardown(() => nc.close())
  const subject = `test.queue-requests.${String(process.pid)}`
  const Req = T.Object({ n: T.Integer() })
  type Reply = { ok: true; double: number } | { ok: false; error: string }
  const served: string[] = []
  const replica = (name: string) =>
    serveQueueRequests<typeof Req, Reply>(
      {
        nc,
        subject,
        schema: Req,
        refused: { ok: false, error: 'not a test request' },
        log,
        failure: { msg: 'test request failed', fields: (req) => ({ n: req.n }) },
      },
      async (req) => {
        served.push(name)
        if (req.n < 0) throw new Error('negative')
        return { ok: true, double: req.n * 2 }
      },
    )
  const a = replica('a')
  const b = replica('b')
  t.teardown(async () => {
    await a.stop()
    await b.stop()
  })
  await nc.flush()

  const ask = async (body: string) => (await nc.request(subject, body, { timeout: 1_000 })).json<unknown>()
  t.same(await ask(JSON.stringify({ n: 21 })), { ok: true, double: 42 }, "the handler's result is the answer")
  t.same(
    await ask(JSON.stringify({ n: 'x' })),
    { ok: false, error: 'not a test request' },
    'a request off the schema is refused',
  )
  t.same(await ask('not json'), { ok: false, error: 'not a test request' }, 'so is one that is not JSON')
  t.equal(served.length, 1, 'and neither reached the handler')
  const failed = await nc.request(subject, JSON.stringify({ n: -1 }), { timeout: 500 }).then(
    () => 'answered',
    (err: unknown) => (err instanceof Error ? err.name : String(err)),
  )
  t.equal(failed, 'TimeoutError', 'a handler that throws leaves the request unanswered')

  served.length = 0
  for (let i = 0; i < 20; i++) await ask(JSON.stringify({ n: i }))
  t.equal(served.length, 20, 'each request is handled by one replica of the queue group')
})
