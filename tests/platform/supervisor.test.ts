import t from 'tap'
import { createLogger } from '../../src/kernel/log.ts'
import type { LocalService } from '../../src/platform/local-services.ts'
import { superviseService } from '../../src/platform/supervisor.ts'

/*
 * The supervisor on its own, with servers that are plain objects ending when the test says so:
 * a server that dies is started again on the same port, a failed restart is retried, stop() ends
 * the supervision (nothing is restarted after it) and stops the current server.
 */
interface FakeServer extends LocalService {
  die(how: string): void
  stopped: boolean
}

function fakeServer(port: number, pid: number): FakeServer {
  let end: (how: string) => void = () => undefined
  const exited = new Promise<string>((resolve) => (end = resolve))
  const server: FakeServer = {
    url: `nats://127.0.0.1:${String(port)}`,
    pid,
    exited,
    stopped: false,
    die: (how) => end(how),
    stop: async () => {
      server.stopped = true
      end('code 0')
    },
  }
  return server
}

t.test('restarts a dead server on its port, retries a failed start, stops for good', async (t) => {
  const starts: (number | undefined)[] = []
  const servers: FakeServer[] = []
  let failNext = false
  const log = createLogger({ level: 'silent' })
  const sup = await superviseService({
    name: 'fake',
    log,
    minBackoffMs: 10,
    maxBackoffMs: 40,
    start: async (port) => {
      starts.push(port)
      if (failNext) {
        failNext = false
        throw new Error('port busy')
      }
      const s = fakeServer(port ?? 4999, 100 + servers.length)
      servers.push(s)
      return s
    },
  })
  t.same(starts, [undefined], 'the first start picks its port')
  t.equal(sup.state(), 'running')
  t.equal(sup.pid(), 100)

  failNext = true
  servers[0]?.die('signal SIGKILL')
  while (servers.length < 2) await new Promise((r) => setTimeout(r, 5))
  t.same(starts, [undefined, 4999, 4999], 'restarted on the same port, the failed attempt retried')
  t.equal(sup.restarts(), 1)
  t.equal(sup.pid(), 101, 'the new server is the current one')
  t.equal(sup.state(), 'running')

  await sup.stop()
  t.equal(sup.state(), 'stopped')
  t.ok(servers[1]?.stopped, 'stop() stopped the current server')
  servers[1]?.die('code 0')
  await new Promise((r) => setTimeout(r, 50))
  t.equal(starts.length, 3, 'nothing is started after stop()')
})
