import { spawnSync } from 'node:child_process'
import type { FieldIssue } from '../kernel/errors.ts'

/*
 * Syntax check on save: the code is parsed (never run) by the system Python's `ast` module in a
 * child process, which also checks that the entrypoint is a top-level function taking two
 * arguments. Parsing executes nothing of the user's code, so this is safe outside a sandbox.
 */
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

export function checkPythonCode(code: string, entrypoint: string, python = '/usr/bin/python3'): FieldIssue[] {
  const r = spawnSync(python, ['-I', '-S', '-c', CHECKER, entrypoint], { input: code, timeout: 10_000, maxBuffer: 1 << 20, env: {} })
  if (r.status !== 0) return [{ path: '/code', message: `the syntax check could not run: ${r.stderr.toString().trim().slice(0, 300) || String(r.error ?? r.status)}` }]
  const out = JSON.parse(r.stdout.toString() || '{}') as { message?: string }
  return out.message === undefined ? [] : [{ path: '/code', message: out.message }]
}
