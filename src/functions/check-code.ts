import { spawn } from 'node:child_process'
import type { FieldIssue } from '../kernel/errors.ts'

/*
 * Syntax check on save: the code is parsed (never run) by the system Python's `ast` module in a
 * child process, which also checks that the entrypoint is a top-level function taking two
 * arguments. Parsing executes nothing of the user's code, so this is safe outside a sandbox.
 * The check is asynchronous (it runs on the resource service's event loop, which must keep
 * serving other requests), bounded in time, and at most CHECK_CONCURRENCY run at once so a burst
 * of saves cannot start a Python process each.
 */
const CHECK_CONCURRENCY = 2
const CHECK_TIMEOUT_MS = 10_000
const MAX_OUTPUT_BYTES = 1 << 20
const CHECKER = `
import ast, json, sys
src = sys.stdin.read()
entry = sys.argv[1]
try:
    tree = ast.parse(src, "<function>")
except SyntaxError as e:
    print(json.dumps({"line": e.lineno, "message": "%s (line %s)" % (e.msg, e.lineno)}))
    sys.exit(0)
fns = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry]
if not fns:
    print(json.dumps({"message": "the code defines no top-level function %s(input, context)" % entry}))
elif isinstance(fns[-1], ast.AsyncFunctionDef):
    print(json.dumps({"message": "%s must be a plain def, not async def" % entry}))
else:
    a = fns[-1].args
    n = len(a.posonlyargs) + len(a.args)
    if n < 2 and a.vararg is None:
        print(json.dumps({"message": "%s must take two arguments: (input, context)" % entry}))
    else:
        print("{}")
`

let running = 0
const waiting: (() => void)[] = []

async function limited<T>(task: () => Promise<T>): Promise<T> {
  if (running >= CHECK_CONCURRENCY) await new Promise<void>((r) => waiting.push(r))
  else running++
  try {
    return await task()
  } finally {
    // hand the place to the next waiter directly, so `running` never drops below what runs
    const next = waiting.shift()
    if (next === undefined) running--
    else next()
  }
}

function runChecker(
  python: string,
  code: string,
  entrypoint: string,
): Promise<{ status: number | null; stdout: string; stderr: string; error?: Error }> {
  return new Promise((resolve) => {
    const child = spawn(python, ['-I', '-S', '-c', CHECKER, entrypoint], {
      env: {},
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: CHECK_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    })
    const out: Buffer[] = []
    const err: Buffer[] = []
    let size = 0
    const collect = (into: Buffer[]) => (b: Buffer) => {
      size += b.length
      if (size > MAX_OUTPUT_BYTES) child.kill('SIGKILL')
      else into.push(b)
    }
    child.stdout.on('data', collect(out))
    child.stderr.on('data', collect(err))
    let failed: Error | undefined
    child.on('error', (e) => (failed = e))
    // a checker that died early closes stdin: the write error is reported by the exit status
    child.stdin.on('error', () => undefined)
    child.stdin.end(code)
    child.on('close', (status, signal) => {
      const error =
        failed ??
        (signal !== null
          ? new Error(
              `the checker was stopped (${signal}) after ${String(CHECK_TIMEOUT_MS / 1000)} s or on too much output`,
            )
          : undefined)
      resolve({
        status,
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
        ...(error === undefined ? {} : { error }),
      })
    })
  })
}

export async function checkPythonCode(
  code: string,
  entrypoint: string,
  python = '/usr/bin/python3',
): Promise<FieldIssue[]> {
  const r = await limited(() => runChecker(python, code, entrypoint))
  if (r.status !== 0)
    return [
      {
        path: '/code',
        message: `the syntax check could not run: ${r.stderr.trim().slice(0, 300) || String(r.error?.message ?? r.status)}`,
      },
    ]
  const out = JSON.parse(r.stdout || '{}') as { message?: string }
  return out.message === undefined ? [] : [{ path: '/code', message: out.message }]
}
