import type { Socket } from 'node:net'
import { NodeTransport } from '@nats-io/transport-node/lib/node_transport.js'

/*
 * One socket write per connection and event-loop turn. nats.js writes its outbound buffer in a
 * microtask after the first command, so commands issued by separate promise chains (each job's
 * claim, state write and ack; each chat turn's KV writes and events) resolve after that flush and
 * cost a `write` each: the largest single item of a job worker's profile (22 % in bench/queue, the
 * write syscall waking nats-server every time). Here the socket is corked at a turn's first write
 * and uncorked in `setImmediate`, after the I/O callbacks of the turn: what they wrote leaves in one
 * `writev`, and nothing waits longer than the rest of the current turn. Close stays safe: nats.js
 * ends a connection with a write whose callback it awaits, which runs once that write is uncorked.
 * Applied once per process; checked against @nats-io/transport-node 3.4.0 (pinned in package.json).
 */
interface Transport {
  socket?: Socket
  send(frame: Uint8Array): void
}

let applied = false

export function applyWriteBatching(): void {
  if (applied) return
  applied = true
  const proto = NodeTransport.prototype as unknown as Transport
  const send = proto.send
  proto.send = function batchedSend(this: Transport, frame: Uint8Array): void {
    const socket = this.socket
    if (socket !== undefined && socket.writableCorked === 0 && !socket.destroyed) {
      socket.cork()
      setImmediate(() => socket.uncork())
    }
    send.call(this, frame)
  }
}
