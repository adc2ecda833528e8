import net from 'node:net'
import pg from 'pg'

/** Committed transactions of a database so far (`pg_stat_database`): how often a measured route reached Postgres. */
export async function committedTransactions(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const r = await client.query<{ n: string }>(
      'select xact_commit::text as n from pg_stat_database where datname = current_database()',
    )
    return Number(r.rows[0]?.n ?? 0)
  } finally {
    await client.end()
  }
}

/** What a `pgWireCounter` saw on the client → server side. */
export interface PgWireCounts {
  /** Times the client sent after the server had answered (or first): round trips that waited on the server. */
  roundTrips: number
  /** Socket reads of the proxy from the client: about the client's write calls (coalesced when sent close together). */
  clientWrites: number
  /** Simple-query messages opening a transaction (`BEGIN …`). */
  begins: number
}

/**
 * A TCP proxy in front of Postgres that counts, per connection, how often the client had to wait
 * for the server (a client send after server data), the client's writes and the BEGINs it sent
 * (frontend messages parsed: the startup packet, then type byte + length). Point a saved database
 * connection at `port` and compare `counts()` before and after a number of calls, one at a time.
 */
export async function pgWireCounter(
  host: string,
  port: number,
): Promise<{ port: number; counts(): PgWireCounts; close(): Promise<void> }> {
  const totals: PgWireCounts = { roundTrips: 0, clientWrites: 0, begins: 0 }
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host)
    sockets.add(client).add(upstream)
    let serverSpoke = true
    let started = false
    let pending = Buffer.alloc(0)
    client.on('data', (chunk: Buffer) => {
      totals.clientWrites++
      if (serverSpoke) totals.roundTrips++
      serverSpoke = false
      pending = Buffer.concat([pending, chunk])
      for (;;) {
        if (!started) {
          if (pending.length < 4) break
          const len = pending.readInt32BE(0)
          if (pending.length < len) break
          pending = pending.subarray(len)
          started = true
          continue
        }
        if (pending.length < 5) break
        const len = pending.readInt32BE(1)
        if (pending.length < len + 1) break
        if (pending[0] === 0x51 /* Q */ && /^\s*begin\b/i.test(pending.toString('utf8', 5, Math.min(len + 1, 40))))
          totals.begins++
        pending = pending.subarray(len + 1)
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      serverSpoke = true
      client.write(chunk)
    })
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('close', end).on('error', end)
    upstream.on('close', end).on('error', end)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    counts: () => ({ ...totals }),
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
