import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { optionList, optionText, type ParsedArgs } from './args.ts'
import { answerOrRefusal, clientOf, yamlOf } from './cmd-config.ts'
import { readSource, type Io } from './io.ts'
import { hasChanges, renderPlan, type ApplyResult } from './plan-text.ts'

/* `package preview|install|uninstall|list|export|create` over `/api/v1/packages`. */

const json = (a: ParsedArgs): boolean => optionText(a, 'output') === 'json'

/** `--values file` (a YAML/JSON mapping), then each `--var NAME=value` over it. */
export function packageVariables(a: ParsedArgs): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const file = optionText(a, 'values')
  if (file !== undefined) {
    const v = parse(readFileSync(file, 'utf8')) as unknown
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new Error(`${file}: not a mapping of NAME: value`)
    Object.assign(out, v)
  }
  for (const pair of optionList(a, 'var')) {
    const eq = pair.indexOf('=')
    if (eq <= 0) throw new Error(`--var ${pair}: write NAME=value`)
    out[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return out
}

/** The apply result inside a preview or install answer (`{apply: …}` or the result itself). */
const applyOf = (body: Record<string, unknown>): ApplyResult =>
  (typeof body['apply'] === 'object' && body['apply'] !== null ? body['apply'] : body) as ApplyResult

export async function packagePreview(a: ParsedArgs, io: Io): Promise<number> {
  const source = await readSource(a.positional[0] as string)
  const variables = packageVariables(a)
  const body = await answerOrRefusal(() =>
    clientOf(a).json<Record<string, unknown>>('POST', '/api/v1/packages/preview', { source, variables }),
  )
  const r = applyOf(body)
  if (json(a)) io.out(`${JSON.stringify(body, null, 2)}\n`)
  else {
    io.out(renderPlan(r, io, { applied: false }))
    if (body['requires_input'] === true) io.out('Some required variables have no value yet (--var NAME=value).\n')
  }
  if (r.success === false) return 1
  return hasChanges(r) ? 2 : 0
}

export async function packageInstall(a: ParsedArgs, io: Io): Promise<number> {
  const source = await readSource(a.positional[0] as string)
  const variables = packageVariables(a)
  const body = await answerOrRefusal(() =>
    clientOf(a).json<Record<string, unknown>>('POST', '/api/v1/packages/install', { source, variables }),
  )
  const r = applyOf(body)
  if (json(a)) io.out(`${JSON.stringify(body, null, 2)}\n`)
  else {
    const pkg = (body['package'] ?? {}) as { name?: string; version?: string }
    io.out(renderPlan(r, io, { applied: true }))
    if (pkg.name !== undefined) io.out(`Installed ${pkg.name}${pkg.version === undefined ? '' : ` ${pkg.version}`}.\n`)
  }
  return r.success === false ? 1 : 0
}

export async function packageUninstall(a: ParsedArgs, io: Io): Promise<number> {
  const name = a.positional[0] as string
  const body = await clientOf(a).json<Record<string, unknown>>('DELETE', `/api/v1/packages/${encodeURIComponent(name)}`)
  if (typeof body === 'object' && body !== null && typeof body['apply'] === 'object')
    io.out(renderPlan(applyOf(body), io, { applied: true }))
  io.err(`Uninstalled ${name}.\n`)
  return 0
}

export async function packageList(a: ParsedArgs, io: Io): Promise<number> {
  const list = await clientOf(a).json<unknown>('GET', '/api/v1/packages')
  const items = (Array.isArray(list) ? list : ((list as { items?: unknown[] }).items ?? [])) as {
    name?: string
    version?: string
    description?: string
  }[]
  if (json(a)) io.out(`${JSON.stringify(items, null, 2)}\n`)
  else if (items.length === 0) io.out('No packages installed.\n')
  else for (const p of items) io.out(`${p.name ?? '?'}\t${p.version ?? ''}\t${p.description ?? ''}\n`)
  return 0
}

export async function packageExport(a: ParsedArgs, io: Io): Promise<number> {
  const name = a.positional[0] as string
  io.out(yamlOf(await clientOf(a).json('GET', `/api/v1/packages/${encodeURIComponent(name)}/export`)))
  return 0
}

/** `type:ns/name` → `{type, namespace, name}`; `type:name` → `{type, name}` (a named kind, a webhook's path). */
export function resourceRef(text: string): { type: string; namespace?: string; name: string } {
  const m = /^([a-z_]+):(.+)$/.exec(text)
  if (m === null) throw new Error(`--resource ${text}: write TYPE:NAMESPACE/NAME (function:demo/double) or TYPE:NAME`)
  const [, type, rest] = m as unknown as [string, string, string]
  const slash = rest.indexOf('/')
  return slash <= 0 ? { type, name: rest } : { type, namespace: rest.slice(0, slash), name: rest.slice(slash + 1) }
}

export async function packageCreate(a: ParsedArgs, io: Io): Promise<number> {
  const name = optionText(a, 'name')
  if (name === undefined) throw new Error('--name is required')
  const description = optionText(a, 'description')
  const author = optionText(a, 'author')
  const body = await clientOf(a).json('POST', '/api/v1/packages/create', {
    name,
    version: optionText(a, 'version') ?? '0.1.0',
    ...(description === undefined ? {} : { description }),
    ...(author === undefined ? {} : { author }),
    resources: optionList(a, 'resource').map(resourceRef),
  })
  io.out(yamlOf(body))
  return 0
}
