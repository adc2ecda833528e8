import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { isAlive } from '../../src/platform/local-services.ts'
import { pollUntil, singleNodeEnv, startSingleNode, stopWith, tempDataDir, type SingleNode } from './single-node.ts'

/*
 * Stopping single-node mode the way process managers and terminals do: a signal to the `npm start`
 * process itself (npm → sh → node: the start script execs node, so the signal reaches it) ends
 * node, nats-server and Postgres. Also: a restart with another RATE_LIMIT_WINDOW_SECONDS on the
 * same data directory, and a stop while the local nats-server does not answer.
 */
const dataDir = tempDataDir(t)

function processes(node: SingleNode): number[] {
  const nodePid = (JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')) as { pid: number }).pid
  return [nodePid, node.natsPid(), node.postgresPid()]
}

// A bound on "stops at all": the bug this guards against hung until a second signal.
const gone = async (pids: number[], t: { comment(s: string): void }, since: number) => {
  const r = await pollUntil(
    'node, nats-server and postgres to end',
    async () => (pids.every((p) => !isAlive(p)) ? true : undefined),
    20_000,
    50,
  )
  // measured, not asserted (timing assertions belong in bench/)
  t.comment(`all gone ${String(Math.round(performance.now() - since))} ms after the signal`)
  return r
}

t.test('SIGTERM to `npm start` stops node, nats-server and postgres', async (t) => {
  const node = await startSingleNode(singleNodeEnv(dataDir), 'npm')
  const pids = processes(node)
  t.ok(pids.every(isAlive), 'node and both servers run')
  t.not(pids[0], node.child.pid, 'node is not the npm process itself')
  // npm exits with node's code: 0 only when node got the signal and shut down cleanly
  const at = performance.now()
  t.equal(await stopWith(node.child, 'SIGTERM'), 0, 'node handled the signal and exited cleanly')
  t.ok(await gone(pids, t, at), 'everything ended')
})

t.test('SIGINT to `npm start`, after a restart with another RATE_LIMIT_WINDOW_SECONDS', async (t) => {
  // the first start created RATE_LIMITS with a 900 s TTL; 60 s is below its 120 s duplicate window
  const node = await startSingleNode(singleNodeEnv(dataDir, { RATE_LIMIT_WINDOW_SECONDS: '60' }), 'npm')
  const health = await fetch(`${node.base}/health`)
  t.equal(health.status, 200, 'starts fine and is healthy')
  const pids = processes(node)
  const at = performance.now()
  t.equal(await stopWith(node.child, 'SIGINT'), 0, 'node handled the signal and exited cleanly')
  t.ok(await gone(pids, t, at), 'everything ended')
})

t.test('stopping while the local nats-server does not answer does not hang', async (t) => {
  const node = await startSingleNode(singleNodeEnv(dataDir))
  const pids = processes(node)
  // SIGSTOP: the connection stays open but nothing answers, so a drain would wait forever
  process.kill(node.natsPid(), 'SIGSTOP')
  const at = performance.now()
  await stopWith(node.child, 'SIGTERM')
  t.ok(await gone(pids, t, at), 'everything ended')
})
