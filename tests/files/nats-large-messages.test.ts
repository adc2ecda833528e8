import { createHash, randomBytes } from 'node:crypto'
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node'
import t, { type Test } from 'tap'
import { giveBackChunk, POOL_BUFFER_BYTES, pooledChunks, takeChunk } from '../../src/platform/chunk-pool.ts'
import { applyLargeMessages, sendUncopied } from '../../src/platform/nats-large-messages.ts'
import { applyWriteBatching } from '../../src/platform/nats-write-batching.ts'
import { readServices } from '../setup/services.ts'

/*
 * The patches of src/platform/nats-large-messages.ts against the real server: messages of every
 * size around the thresholds (64 KiB, half a pooled buffer, a pooled buffer, larger) arrive intact
 * whether or not they were sent uncopied, mixed with small ones in one flush; a received chunk given
 * back to the pool (src/platform/chunk-pool.ts) is reused for the next one without corrupting it;
 * the pool takes back only its own buffers.
 */
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

async function twoConnections(t: Test): Promise<[NatsConnection, NatsConnection]> {
  applyWriteBatching()
  applyLargeMessages()
  const { natsUrl } = readServices()
  const a = await connect({ servers: natsUrl, noAsyncTraces: true })
  const b = await connect({ servers: natsUrl, noAsyncTraces: true })
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  return [a, b]
}

/** Collects `n` messages of `subject`, handing each to `seen` as it arrives. */
function collect(nc: NatsConnection, subject: string, n: number, seen: (m: Msg) => void = () => undefined) {
  const got: { size: number; sha: string; subject: string }[] = []
  const sub = nc.subscribe(subject, { max: n })
  const done = (async () => {
    for await (const m of sub) {
      got.push({ size: m.data.length, sha: sha(m.data), subject: m.subject })
      seen(m)
    }
    return got
  })()
  return done
}

t.test('large and small messages, copied or not, arrive intact', async (t) => {
  const [pub, sub] = await twoConnections(t)
  const subject = `large.${String(process.pid)}.intact`
  const sizes = [10, 64 * 1024 - 1, 64 * 1024 + 1, 200_000, 300_000, 512 * 1024, POOL_BUFFER_BYTES - 200, 1_500_000, 3]
  const payloads = sizes.flatMap((s) => [randomBytes(s), randomBytes(s)])
  const arrived = collect(sub, `${subject}.>`, payloads.length)
  await sub.flush()
  payloads.forEach((p, i) => {
    // every other one uncopied: both kinds share the flushes of this turn
    pub.publish(`${subject}.${String(i)}`, i % 2 === 0 ? sendUncopied(p) : p)
  })
  await pub.flush()
  const got = await arrived
  t.equal(got.length, payloads.length, 'every message arrived')
  got.forEach((g, i) => {
    const p = payloads[i] as Buffer
    t.equal(g.subject, `${subject}.${String(i)}`, `message ${String(i)} in order`)
    t.equal(g.size, p.length, `message ${String(i)}: ${String(p.length)} bytes`)
    t.equal(g.sha, sha(p), `message ${String(i)}: the same bytes`)
  })
})

t.test('a chunk given back is reused for the next one, which arrives intact', async (t) => {
  const [pub, sub] = await twoConnections(t)
  const subject = `large.${String(process.pid)}.pool`
  const payloads = Array.from({ length: 12 }, () => randomBytes(512 * 1024 + 100))
  const buffers = new Set<ArrayBufferLike>()
  // handed back as soon as it was read, as sendBlob does once a chunk went to the socket
  const arrived = collect(sub, subject, payloads.length, (m) => {
    buffers.add(m.data.buffer)
    giveBackChunk(m.data)
  })
  await sub.flush()
  for (const p of payloads) {
    pub.publish(subject, sendUncopied(p))
    // one at a time, so each message is parsed after the previous one was given back
    await pub.flush()
  }
  const got = await arrived
  t.same(
    got.map((g) => g.sha),
    payloads.map(sha),
    'every message intact',
  )
  t.ok(buffers.size < payloads.length, `the messages shared ${String(buffers.size)} pooled buffers`)
  t.ok(pooledChunks() >= 1, 'and they are back in the pool')
})

t.test('the pool takes back only its own buffers', async (t) => {
  const before = pooledChunks()
  giveBackChunk(Buffer.allocUnsafeSlow(POOL_BUFFER_BYTES))
  giveBackChunk(new Uint8Array(100))
  t.equal(pooledChunks(), before, 'foreign buffers are ignored')
  const mine = takeChunk()
  const taken = pooledChunks()
  t.equal(mine.length, 512 * 1024, 'a chunk of the default size')
  t.equal(mine.buffer.byteLength, POOL_BUFFER_BYTES, 'on a buffer with room for headers')
  giveBackChunk(mine.subarray(10, 20))
  giveBackChunk(mine)
  t.equal(pooledChunks(), taken + 1, 'given back once, by any view of it')
  t.equal(takeChunk(1000).buffer, mine.buffer, 'and taken again')
})
