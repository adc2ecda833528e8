import { GO_TOOLS, goToolNamed } from '../helpers/go-tool.ts'

/*
 * Started in the background by tests/run.sh when a run begins: builds the Go tools the tests use
 * (GO_TOOLS: helm and kubeconform for the chart test) into the machine cache when they are not
 * there yet, one after the other, so that a fresh machine's downloads and compiles overlap the
 * lint, the type-check and the first test files. The test that needs a tool waits for the build in
 * progress (tests/helpers/go-tool.ts); a build that fails here is reported by that test, not here.
 */
for (const name of Object.keys(GO_TOOLS) as (keyof typeof GO_TOOLS)[]) {
  const started = Date.now()
  const r = await goToolNamed(name).catch((err: unknown) => ({ path: undefined, skip: String(err) }))
  process.stdout.write(
    `${name}: ${r.skip === false ? `${r.path} (${String(Math.round((Date.now() - started) / 1000))} s)` : r.skip}\n`,
  )
}
