import { randomUUID } from 'node:crypto'
import type { Logger } from '../src/kernel/log.ts'
import { startHeartbeat, workersBucket, type Heartbeat } from '../src/platform/heartbeat.ts'
import type { NatsConnection } from '../src/platform/nats.ts'
import type { NatsNames } from '../src/platform/nats-names.ts'
import type { SandboxExecutor } from './executor.ts'

/*
 * One pool seen from every process. Each process that owns sandboxes (a function worker) registers
 * as `sandbox.<node>` in the WORKERS bucket — its heartbeat carries its pool stats, so any process
 * can read the whole pool — and answers control requests on `sandbox.ctl` (every node) and
 * `sandbox.ctl.<node>` (one node). The admin endpoints (src/functions/admin.ts) scatter a request
 * and gather one answer per live node; a scale target is split across the nodes.
 */
export type ControlOp =
  | { op: 'stats' }
  | { op: 'scale'; target: number }
  | { op: 'reload'; packagesDir?: string | null }
  | { op: 'restart'; name: string }
  | { op: 'workers' }
  | { op: 'workers.scale'; target: number }
  | { op: 'workers.reload'; packagesDir?: string | null }

export const controlSubject = (names: NatsNames, node?: string): string => names.subject(node === undefined ? 'sandbox.ctl' : `sandbox.ctl.${node}`)

export interface SandboxControl {
  nodeId: string
  stop(): Promise<void>
}

export async function startSandboxControl(o: { nc: NatsConnection; names: NatsNames; sandboxes: SandboxExecutor; log: Logger }): Promise<SandboxControl> {
  const nodeId = randomUUID().slice(0, 8)
  const log = o.log.child({ node: nodeId })
  const sbx = o.sandboxes
  const answer = async (op: ControlOp): Promise<unknown> => {
    switch (op.op) {
      case 'stats':
        return { ...sbx.stats(), names: sbx.pool?.names() ?? [] }
      case 'scale':
        if (sbx.pool === null) return { error: `SANDBOX_EXECUTOR=${sbx.stats().executor} has no pool to scale` }
        return sbx.pool.scale(op.target)
      case 'reload':
        if (op.packagesDir !== undefined) sbx.setPackagesDir(op.packagesDir ?? undefined)
        return sbx.pool === null ? { idle_containers: 0, success: 0, failed: 0 } : sbx.pool.reload()
      case 'restart': {
        const inPool = (await sbx.pool?.restart(op.name)) ?? false
        const inShared = !inPool && sbx.sharedStarted() ? await sbx.shared?.restart(op.name) : false
        return { found: inPool || inShared === true }
      }
      case 'workers':
        return { workers: sbx.sharedStarted() ? (sbx.shared?.list() ?? []) : [], count: sbx.sharedCount() }
      case 'workers.scale':
        return sbx.shared?.scale(op.target)
      case 'workers.reload':
        if (op.packagesDir !== undefined) sbx.setPackagesDir(op.packagesDir ?? undefined)
        return sbx.shared?.reload()
    }
  }
  const serve = (subject: string) =>
    o.nc.subscribe(subject, {
      callback: (_err, msg) => {
        void (async () => {
          let body: unknown
          try {
            body = { node: nodeId, ok: true, result: await answer(msg.json<ControlOp>()) }
          } catch (err) {
            body = { node: nodeId, ok: false, error: err instanceof Error ? err.message : String(err) }
            log.warn({ err }, 'sandbox control request failed')
          }
          if (msg.reply !== undefined && msg.reply !== '') msg.respond(JSON.stringify(body))
        })()
      },
    })
  const subs = [serve(controlSubject(o.names)), serve(controlSubject(o.names, nodeId))]
  const heartbeat: Heartbeat = startHeartbeat({ kv: await workersBucket(o.nc, o.names), role: 'sandbox', nodeId, info: () => ({ ...sbx.stats(), pid: process.pid }), log })
  await heartbeat.beat()
  return {
    nodeId,
    async stop() {
      for (const s of subs) s.unsubscribe()
      await heartbeat.stop()
    },
  }
}
