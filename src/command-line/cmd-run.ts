import { optionText, type ParsedArgs } from './args.ts'
import { clientOf } from './cmd-config.ts'
import { readJsonArg, type Io } from './io.ts'

/* `run <ns>/<fn>`: `POST /functions/{ns}/{name}/execute`, waiting for the result. */

/** `ns/name` → its two parts, each URL-encoded. */
export function address(text: string, what: string): { namespace: string; name: string } {
  const m = /^([^/]+)\/([^/]+)$/.exec(text)
  if (m === null) throw new Error(`${what} ${text}: write NAMESPACE/NAME`)
  return { namespace: encodeURIComponent(m[1] as string), name: encodeURIComponent(m[2] as string) }
}

interface ExecuteResult {
  status: 'success' | 'error' | 'timeout'
  execution_id: string
  result: unknown
  error: string | null
  output?: string
  duration_ms?: number
}

export async function run(a: ParsedArgs, io: Io): Promise<number> {
  const { namespace, name } = address(a.positional[0] as string, 'function')
  const input = optionText(a, 'input')
  const timeout = optionText(a, 'timeout')
  const r = await clientOf(a).json<ExecuteResult>('POST', `/functions/${namespace}/${name}/execute`, {
    input: input === undefined ? {} : readJsonArg(input, '--input'),
    ...(timeout === undefined ? {} : { timeout: Number(timeout) }),
  })
  if (optionText(a, 'output') === 'json') io.out(`${JSON.stringify(r, null, 2)}\n`)
  else {
    if (r.output !== undefined && r.output !== '') io.err(r.output.endsWith('\n') ? r.output : `${r.output}\n`)
    if (r.status === 'success') io.out(`${JSON.stringify(r.result, null, 2)}\n`)
    else io.err(`${r.status}: ${r.error ?? ''} (execution ${r.execution_id})\n`)
  }
  return r.status === 'success' ? 0 : 1
}
