import { optionText, type ParsedArgs } from './args.ts'
import { clientOf } from './cmd-config.ts'
import { paint, type Io } from './io.ts'
import { sseEvents } from './sse.ts'

/*
 * `events tail [filter]`: `GET /api/v1/events/stream?filter=…`, one line per execution event
 * until Ctrl-C (or the server ends the stream).
 */

const STATUS_COLOR: Record<string, string> = { completed: '32', failed: '31', cancelled: '33', running: '36' }

export async function eventsTail(a: ParsedArgs, io: Io): Promise<number> {
  const filter = a.positional[0] ?? '>'
  const controller = new AbortController()
  const stop = () => controller.abort()
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  const json = optionText(a, 'output') === 'json'
  try {
    const res = await clientOf(a).raw('GET', `/api/v1/events/stream?filter=${encodeURIComponent(filter)}`, {
      signal: controller.signal,
      accept: 'text/event-stream',
    })
    io.err(`Following events.execution.${filter} at ${clientOf(a).url} (Ctrl-C stops)\n`)
    for await (const ev of sseEvents(res)) {
      if (ev.event === 'error') {
        io.err(`error: ${JSON.stringify(ev.data)}\n`)
        return 1
      }
      if (ev.event === 'done') return 0
      if (ev.event !== 'execution') continue
      const e = ev.data as Record<string, unknown>
      if (json) {
        io.out(`${JSON.stringify(e)}\n`)
        continue
      }
      const status = String(e['status'])
      const took = typeof e['duration_ms'] === 'number' ? ` ${String(e['duration_ms'])} ms` : ''
      const err = typeof e['error'] === 'string' && e['error'] !== '' ? ` ${e['error']}` : ''
      io.out(
        `${String(e['finished_at'] ?? e['started_at'] ?? e['created_at'] ?? '')} ${String(e['namespace'])}/${String(e['name'])} ${paint(io, STATUS_COLOR[status] ?? '0', status)} ${String(e['execution_id'])}${took}${err}\n`,
      )
    }
  } catch (err) {
    if (controller.signal.aborted) return 0
    throw err
  } finally {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
  }
  return 0
}
