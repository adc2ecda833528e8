// The image's HEALTHCHECK: GET /health of this container's own gateway. `/health` answers 200 only
// when the process and what it depends on are up (503 with the same JSON when degraded or down:
// docs/operations.md). Only a process running the gateway role serves HTTP; one without it
// (ROLES=workers, resources or actors) has nothing to ask, so this reports healthy and says why.
// Plain Node, no dependencies: it runs with `node deploy/healthcheck.mjs` in the image.
const roles = (process.env.ROLES ?? 'all').split(',').map((r) => r.trim())
if (!roles.includes('all') && !roles.includes('gateway')) {
  process.stdout.write(`ROLES=${process.env.ROLES ?? ''} serves no HTTP: nothing to check\n`)
  process.exit(0)
}
const port = process.env.PORT ?? '8000'
try {
  const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(4000) })
  process.stdout.write(`${String(res.status)} ${await res.text()}\n`)
  process.exit(res.status === 200 ? 0 : 1)
} catch (err) {
  process.stdout.write(`no answer on port ${port}: ${String(err)}\n`)
  process.exit(1)
}
