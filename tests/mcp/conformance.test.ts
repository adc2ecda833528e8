import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, devDependency) against
 * /mcp of a real platform, its server scenarios (the active suite), as a child process.
 *
 * Two things stand between the suite and /mcp, both outside the platform:
 * - The suite's client sends no credentials (its server scenarios build the SDK's transport with
 *   the URL alone, and it has no header option). /mcp needs an API key, so the suite talks to a
 *   relay in this test that adds `Authorization: Bearer <key>` and passes everything else through
 *   unchanged — what `mcp-remote --header` does for a desktop client. Nothing in the platform is
 *   opened for it.
 * - Its CLI imports `globSync` from node:fs (Node ≥ 22; only its `tier-check` command uses it),
 *   so on Node 20 it fails to load. A resolve hook gives that one import a stand-in that throws.
 *
 * The scenarios written for the suite's own "everything" server (tools named test_*, resources,
 * prompts, logging, completion, sampling, elicitation) fail here by design: docs/mcp.md lists
 * every scenario and why. This test pins the ones that pass: one of them failing is a regression.
 */
export const PASSING = [
  'server-initialize',
  'ping',
  'tools-list',
  'dns-rebinding-protection',
  'server-sse-multiple-streams',
] as const

const CONFORMANCE = join(import.meta.dirname, '../../node_modules/@modelcontextprotocol/conformance/dist/index.js')

// node:fs has no globSync before Node 22: the suite's bundle gets a node:fs with a stand-in
const NODE20_HOOK = `export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/'))
    return { shortCircuit: true, url: 'data:text/javascript,' + encodeURIComponent("export * from 'node:fs'; export const globSync = () => { throw new Error('fs.globSync needs Node 22') }") }
  return next(specifier, context)
}`
const REGISTER = `data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(NODE20_HOOK)}`)})`,
)}`

const env = await startTestPlatform(t)
const created = await env.request('POST', '/api/v1/api-keys', {
  body: { name: 'conformance', permissions: { 'platform.functions/*/*.execute:own': true } },
})
if (created.status !== 201) throw new Error(created.text)
const key = String((created.body as { key: string }).key)
const fn = await env.request('POST', '/api/v1/functions', {
  body: {
    namespace: 'conformance',
    name: 'add',
    description: 'Adds a and b',
    code: 'def handler(input, context):\n    return {"sum": input["a"] + input["b"]}\n',
    input_schema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
})
if (fn.status !== 201) throw new Error(fn.text)

/** Passes every request to the platform as it came (Host and Origin included), with the API key added. */
const platformUrl = new URL(env.base)
const relay = http.createServer((req, res) => {
  const upstream = http.request(
    {
      host: platformUrl.hostname,
      port: platformUrl.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, authorization: `Bearer ${key}` },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    },
  )
  upstream.on('error', () => res.destroy())
  req.pipe(upstream)
})
await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
t.teardown(
  () =>
    new Promise<void>((resolve) => {
      relay.closeAllConnections()
      relay.close(() => resolve())
    }),
)
const relayPort = (relay.address() as AddressInfo).port

interface Check {
  id: string
  description?: string
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED'
  errorMessage?: string
}

/** Runs the suite; every scenario's checks, read from its checks.json. */
async function runSuite(): Promise<Map<string, Check[]>> {
  const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-'))
  t.teardown(() => rmSync(out, { recursive: true, force: true }))
  const child = spawn(
    process.execPath,
    ['--import', REGISTER, CONFORMANCE, 'server', '--url', `http://127.0.0.1:${String(relayPort)}/mcp`, '-o', out],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: out },
  )
  let log = ''
  child.stdout.on('data', (c: Buffer) => (log += c.toString()))
  child.stderr.on('data', (c: Buffer) => (log += c.toString()))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  const results = new Map<string, Check[]>()
  for (const dir of readdirSync(out)) {
    const checks = JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')) as Check[]
    // server-<scenario>-<timestamp>
    results.set(dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, ''), checks)
  }
  if (results.size === 0) throw new Error(`the suite wrote no results (exit ${String(code)}):\n${log}`)
  return results
}

const results = await runSuite()

t.test('the scenarios that pass today keep passing', async (t) => {
  for (const scenario of PASSING) {
    const checks = results.get(scenario)
    t.ok(checks, `${scenario} ran`)
    const failed = (checks ?? []).filter((c) => c.status === 'FAILURE')
    t.same(
      failed.map((c) => `${c.id}: ${c.errorMessage ?? ''}`),
      [],
      `${scenario}: no failed check`,
    )
  }
})

t.test('every scenario, as docs/mcp.md tables it', async (t) => {
  for (const [scenario, checks] of [...results].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const failed = checks.filter((c) => c.status === 'FAILURE')
    const warned = checks.filter((c) => c.status === 'WARNING')
    t.comment(
      `${scenario}: ${failed.length === 0 ? 'pass' : 'FAIL'}${warned.length > 0 ? ` (${String(warned.length)} warning)` : ''} ${[
        ...failed,
        ...warned,
      ]
        .map((c) => `${c.id}: ${c.errorMessage ?? c.description ?? ''}`)
        .join(' | ')}`,
    )
  }
  t.ok(results.size >= 30, `the active suite ran (${String(results.size)} scenarios)`)
})
