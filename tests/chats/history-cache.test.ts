import pg from 'pg'
import t, { type Test } from 'tap'
import { historyCache, seedChat } from '../../src/chats/history-cache.ts'
import { chatStore } from '../../src/chats/store.ts'
import type { Db } from '../../src/platform/db.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The worker's history cache against real Postgres: a held chat's next read asks only for what was
 * added since; what it holds plus what it read must add up to chats.message_count, else (a message
 * committed out of seq order, one deleted) the whole history is read, as without the cache.
 */
/** A platform with the agent <ns>/echo, its chat store and a user to own chats. */
async function chatsOfAnAgent(t: Test, ns: string) {
  const env = await startTestPlatform(t, { ROLES: 'gateway,resources' })
  const store = chatStore(env.platform.db as Db)
  const agent = (
    await env.request('POST', '/api/v1/agents', { body: { namespace: ns, name: 'echo', system_prompt: 'Echo.' } })
  ).body as { id: string }
  const user = (await env.sql<{ id: string }>('select id from users limit 1'))[0]?.id ?? ''
  return { env, store, agent, user }
}

t.test('history cache: small reads while coherent, whole reads when not', async (t) => {
  const { env, store, agent, user } = await chatsOfAnAgent(t, 'hist')
  const newChat = async (n: number) =>
    store.create({
      userId: user,
      agent: { id: agent.id, namespace: 'hist', name: 'echo' },
      input: {},
      messages: Array.from({ length: n }, (_, i) => ({
        role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
        content: `m${String(i + 1)}`,
      })),
    })
  /** The reads the cache made: whole (no afterSeq) or since a seq. */
  const reads: string[] = []
  const counted = {
    turnContext: (id: string, limit: number, afterSeq?: number) => {
      reads.push(afterSeq === undefined ? 'whole' : 'since')
      return store.turnContext(id, limit, afterSeq)
    },
  }
  const cache = historyCache(counted, 2)
  const contents = (h: { content: string | null }[]) => h.map((m) => m.content)

  const a = await newChat(3)
  const first = await cache.read(a.id, 4)
  t.same(contents(first?.history ?? []), ['m1', 'm2', 'm3'], 'the first read is whole')
  t.equal(first?.chat.id, a.id)
  // the turn writes two messages; the cache holds them next to the rest
  const appended = await store.appendMany(a.id, [
    { role: 'user', content: 'm4' },
    { role: 'assistant', content: 'm5' },
  ])
  const written = appended.rows
  t.ok(
    written.every((r) => typeof r.seq === 'number'),
    'appendMany returns each row with its seq',
  )
  t.equal(appended.message_count, 5, "and the chat's message count after the write")
  let held = cache.extend(a.id, first!, written, 4, 5)!
  t.equal(held.count, 5)
  const second = await cache.read(a.id, 4)
  t.same(contents(second?.history ?? []), ['m2', 'm3', 'm4', 'm5'], 'the last 4, in order')
  t.same(reads, ['whole', 'since'], 'read since the last held message')

  // another writer (a sub-agent answering into this chat) adds one: read since, found, in order.
  // A seq is taken first and left unused, as by a transaction that has not committed yet: the
  // 'late' message below takes it (seq values are unique only as the sequence hands them out)
  await env.sql("select nextval(pg_get_serial_sequence('chat_messages', 'seq'))")
  await store.append(a.id, { role: 'tool', content: 'm6', tool_call_id: 'c1' })
  held = second!
  const third = await cache.read(a.id, 4)
  t.same(contents(third?.history ?? []), ['m3', 'm4', 'm5', 'm6'])
  t.equal(reads.at(-1), 'since')

  // a message committed after a later one (seq below what is held): the counts differ, read whole
  const lastSeq = third!.history.at(-1)!.seq
  await env.sql(`insert into chat_messages (chat_id, seq, role, content) values ($1, $2, 'user', 'late')`, [
    a.id,
    lastSeq - 1,
  ])
  await env.sql('update chats set message_count = message_count + 1 where id = $1', [a.id])
  reads.length = 0
  const fourth = await cache.read(a.id, 4)
  t.same(reads, ['since', 'whole'], 'the missed message makes the sums differ: the whole history is read')
  t.same(contents(fourth?.history ?? []), ['m4', 'm5', 'late', 'm6'], 'in seq order, with the late one')

  // a write of unknown outcome forgets the chat
  cache.drop(a.id)
  reads.length = 0
  await cache.read(a.id, 4)
  t.same(reads, ['whole'])

  // an extend from a stale entry changes nothing; two chats at most (least recently used out)
  const stale = cache.extend(a.id, held, written, 4, held.count + written.length)
  reads.length = 0
  await cache.read(a.id, 4)
  t.same(reads, ['since'], 'a stale entry is not extended (what is held stays)')
  t.equal(stale?.count, held.count + written.length, 'the turn still gets its own view')
  const b = await newChat(1)
  const c = await newChat(1)
  await cache.read(b.id, 4)
  await cache.read(c.id, 4)
  reads.length = 0
  await cache.read(a.id, 4)
  t.same(reads, ['whole'], 'the least recently used chat was let go')

  // a deleted chat: null, and nothing held
  await store.remove(b.id)
  t.equal(await cache.read(b.id, 4), null)
  t.equal(
    (await env.sql<{ n: string }>('select message_count as n from chats where id = $1', [a.id]))[0]?.n,
    '7',
    'message_count counts every insert',
  )
})

/*
 * The count a chat actor vouches for: a worker holding exactly that many messages reads nothing;
 * a turn's write that finds someone else wrote too lets the entry go; a write to a deleted chat
 * writes nothing and says so.
 */
t.test('history cache: no read when the vouched count is what is held', async (t) => {
  const { env, store, agent, user } = await chatsOfAnAgent(t, 'hist2')
  const reads: string[] = []
  const cache = historyCache(
    {
      turnContext: (id: string, limit: number, afterSeq?: number) => (
        reads.push(afterSeq === undefined ? 'whole' : 'since'),
        store.turnContext(id, limit, afterSeq)
      ),
    },
    10,
  )
  const chat = await store.create({
    userId: user,
    agent: { id: agent.id, namespace: 'hist2', name: 'echo' },
    input: {},
    messages: [{ role: 'user', content: 'm1' }],
  })

  const first = await cache.read(chat.id, 10, 1)
  t.same(reads, ['whole'], 'nothing held: read whole, whatever is vouched')
  const w = await store.appendMany(chat.id, [
    { role: 'user', content: 'm2' },
    { role: 'assistant', content: 'm3' },
  ])
  const held = cache.extend(chat.id, first!, w.rows, 10, w.message_count!)
  t.equal(held?.count, 3)
  reads.length = 0
  const second = await cache.read(chat.id, 10, 3)
  t.same(reads, [], 'vouched count = held count: no query')
  t.same(
    second?.history.map((m) => m.content),
    ['m1', 'm2', 'm3'],
  )
  t.equal(second?.chat.id, chat.id, 'the chat row as last read')
  await cache.read(chat.id, 10, 4)
  t.same(reads, ['since'], 'another count: the messages since are read')
  reads.length = 0
  await cache.read(chat.id, 10)
  t.same(reads, ['since'], 'nothing vouched: read since')

  // someone else wrote between the turn's read and its write: the entry goes, the turn gets null
  const before = (await cache.read(chat.id, 10))!
  await store.append(chat.id, { role: 'tool', content: 'from a sub-agent', tool_call_id: 'c1' })
  const mine = await store.appendMany(chat.id, [{ role: 'assistant', content: 'mine' }])
  t.equal(mine.message_count, before.count + 2)
  t.equal(
    cache.extend(chat.id, before, mine.rows, 10, mine.message_count!),
    null,
    'the write does not add up: nothing to vouch for',
  )
  reads.length = 0
  const third = await cache.read(chat.id, 10, mine.message_count!)
  t.same(reads, ['whole'], 'dropped: read whole')
  t.same(
    third?.history.map((m) => m.content),
    ['m1', 'm2', 'm3', 'from a sub-agent', 'mine'],
  )

  // an ephemeral chat past its expiry is never served from memory
  const brief = await store.create({
    userId: user,
    agent: { id: agent.id, namespace: 'hist2', name: 'echo' },
    input: {},
    expiresIn: 1,
    messages: [{ role: 'user', content: 'b1' }],
  })
  const briefHeld = (await cache.read(brief.id, 10))!
  await new Promise((r) => setTimeout(r, 1_100))
  reads.length = 0
  t.equal(await cache.read(brief.id, 10, briefHeld.count), null, 'expired: the read finds no chat')
  t.same(reads, ['since'])

  // a deleted chat: the write writes nothing and returns no count
  const gone = await store.create({
    userId: user,
    agent: { id: agent.id, namespace: 'hist2', name: 'echo' },
    input: {},
  })
  await store.remove(gone.id)
  const none = await store.appendMany(gone.id, [{ role: 'user', content: 'lost' }])
  t.same(none, { message_count: null, rows: [] })
  t.equal(
    (await env.sql<{ n: string }>('select count(*) as n from chat_messages where chat_id = $1', [gone.id]))[0]?.n,
    '0',
  )
})

t.test(
  'an internal chat is handed to its first turn: no read; its create commits without a flush of its own',
  async (t) => {
    const { env, store, agent, user } = await chatsOfAnAgent(t, 'seeded')
    const reads: string[] = []
    const cache = historyCache(
      {
        turnContext: (id: string, limit: number, afterSeq?: number) => (
          reads.push(afterSeq === undefined ? 'whole' : 'since'),
          store.turnContext(id, limit, afterSeq)
        ),
      },
      10,
    )
    const earlier = [
      { role: 'user' as const, content: 'one' },
      { role: 'assistant' as const, content: 'two\u0000' },
    ]
    const { chat, history } = await store.createInternal({
      userId: user,
      agent: { id: agent.id, namespace: 'seeded', name: 'echo' },
      input: { x: 1 },
      expiresIn: 60,
      messages: earlier,
    })
    t.ok(chat.internal)
    t.same(
      history.map((m) => m.content),
      (await store.messages(chat.id)).map((m) => m.content),
      'the history handed over is what was stored (text made storable alike)',
    )
    t.same(
      history.map((m) => m.id),
      (await store.messages(chat.id)).map((m) => m.id),
      'with the stored ids',
    )
    seedChat({ chat, history, count: history.length })
    const h = await cache.read(chat.id, 1)
    t.same(reads, [], 'the first turn reads nothing')
    t.same(
      h?.history.map((m) => m.content),
      ['two\uFFFD'],
      'its last `limit` messages',
    )
    t.equal(h?.count, 2)
    // taken once: the chat's next read (another process's cache, say) goes to Postgres
    seedChat({ chat, history, count: history.length })
    t.equal(
      (await historyCache(store, 10).read(chat.id, 10, 3))?.count,
      2,
      'a seed whose count is not the vouched one is not used',
    )

    // the function's commit: asynchronous for internal chats only (migrations/0023)
    const client = new pg.Client({ connectionString: env.databaseUrl })
    await client.connect()
    t.teardown(() => client.end())
    const sync = async (internal: boolean): Promise<string | undefined> => {
      await client.query('begin')
      try {
        // (the test server runs without synchronous commits: as a production server does here)
        await client.query('set local synchronous_commit = on')
        await client.query(
          `select chat_create_with_messages($1::uuid, $2::uuid, 'seeded', 'echo', null, '{}'::jsonb, null, null, $3, '[]'::jsonb)`,
          [user, agent.id, internal],
        )
        return (await client.query<{ s: string }>("select current_setting('synchronous_commit') as s")).rows[0]?.s
      } finally {
        await client.query('rollback')
      }
    }
    t.equal(await sync(true), 'off', 'an internal chat commits without waiting for the flush')
    t.equal(await sync(false), 'on', "a user's chat commits as every other write")
  },
)
