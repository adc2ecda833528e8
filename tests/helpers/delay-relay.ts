import { createServer, connect, type Server, type Socket } from 'node:net'

/*
 * A TCP relay that stands for a long-distance link: every chunk waits `delayMs` before it is
 * forwarded, each way (so a round trip costs 2 × delayMs more). The kernel here has no netem
 * ("Specified qdisc kind is unknown"), so the multi-region test puts this between a region's leaf
 * node and the hub instead of shaping the veth. Bytes pass through untouched: TLS stays end to end.
 *
 * `cut()` destroys every relayed connection and stops listening (a new connection is refused, as
 * across a broken link); `restore()` listens again on the same address.
 */
export interface DelayRelay {
  host: string
  port: number
  /** Connections relayed now. */
  open(): number
  cut(): Promise<void>
  /** A silent partition: bytes stop flowing both ways and nothing is closed (no FIN, no RST). */
  stall(): void
  restore(): Promise<void>
  close(): Promise<void>
}

export async function startDelayRelay(o: {
  host: string
  port?: number
  target: { host: string; port: number }
  delayMs: number
}): Promise<DelayRelay> {
  const pairs = new Set<[Socket, Socket]>()
  let stalled = false
  // Chunks queued on a timer keep their order: Node runs timers of one duration first in, first out.
  const pipe = (from: Socket, to: Socket) => {
    from.on('data', (chunk: Buffer) => {
      if (stalled) return
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk)
      }, o.delayMs)
    })
    from.on('end', () => setTimeout(() => to.end(), o.delayMs))
  }
  const onConnection = (inbound: Socket) => {
    // a stalled link takes a connection and never answers it
    if (stalled) {
      inbound.on('error', () => undefined)
      pairs.add([inbound, inbound])
      return
    }
    const outbound = connect(o.target.port, o.target.host)
    const pair: [Socket, Socket] = [inbound, outbound]
    pairs.add(pair)
    const drop = () => {
      pairs.delete(pair)
      inbound.destroy()
      outbound.destroy()
    }
    inbound.on('error', drop).on('close', drop)
    outbound.on('error', drop).on('close', drop)
    inbound.setNoDelay(true)
    outbound.setNoDelay(true)
    pipe(inbound, outbound)
    pipe(outbound, inbound)
  }
  let server: Server | undefined
  let port = o.port ?? 0
  const listen = async () => {
    const s = createServer(onConnection)
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject)
      s.listen(port, o.host, () => resolve())
    })
    const addr = s.address()
    if (typeof addr === 'object' && addr !== null) port = addr.port
    server = s
  }
  const stop = async () => {
    const s = server
    server = undefined
    for (const [a, b] of [...pairs]) {
      a.destroy()
      b.destroy()
    }
    pairs.clear()
    if (s !== undefined) await new Promise<void>((resolve) => s.close(() => resolve()))
  }
  await listen()
  return {
    host: o.host,
    get port() {
      return port
    },
    open: () => pairs.size,
    cut: stop,
    stall: () => {
      stalled = true
    },
    restore: async () => {
      if (stalled) {
        // what was sent into the silence is gone: those connections cannot resume
        stalled = false
        for (const [a, b] of [...pairs]) {
          a.destroy()
          b.destroy()
        }
        pairs.clear()
      }
      if (server === undefined) await listen()
    },
    close: stop,
  }
}
