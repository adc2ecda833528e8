// The image's HEALTHCHECK: GET /health of this container's own gateway. `/health` answers 200 only
// when the process and what it depends on are up (503 with the same JSON when degraded or down:
// docs/operations.md). A console-only process (ROLES=console) has no /health: its own page on
// CONSOLE_PORT answering 200 is what it can tell (it reads the build it serves). A process with
// neither (ROLES=workers, resources or actors) serves no HTTP and has nothing to ask, so this
// reports healthy and says why.
// Plain Node, no dependencies: it runs with `node deploy/healthcheck.mjs` in the image.
const roles = (process.env.ROLES ?? 'all').split(',').map((r) => r.trim())
const gateway = roles.includes('all') || roles.includes('gateway')
if (!gateway && !roles.includes('console')) {
  process.stdout.write(`ROLES=${process.env.ROLES ?? ''} serves no HTTP: nothing to check\n`)
  process.exit(0)
}
const port = gateway ? (process.env.PORT ?? '8000') : (process.env.CONSOLE_PORT ?? '51245')
const path = gateway ? '/health' : '/'
try {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(4000) })
  const body = await res.text()
  process.stdout.write(`${String(res.status)} ${gateway ? body : `${String(body.length)} bytes`}\n`)
  process.exit(res.status === 200 ? 0 : 1)
} catch (err) {
  process.stdout.write(`no answer on port ${port}: ${String(err)}\n`)
  process.exit(1)
}
