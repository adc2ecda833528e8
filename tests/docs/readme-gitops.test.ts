import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The README's GitOps example is what a new user copies first: its config validates and applies
 * (with the variable it names set), applies again with nothing changed, and its package previews
 * with its variable and installs.
 */
const README = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8')
const blocks = [...README.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] as string)
const config = blocks.find((b) => b.includes('kind: PlatformConfig'))
const pkg = blocks.find((b) => b.includes('kind: PlatformPackage'))

t.ok(config !== undefined && pkg !== undefined, 'the README shows a config and a package')
// `${CRM_TOKEN}` comes from the resource service's environment: this process's, in a test
process.env['CRM_TOKEN'] = 'from-the-environment'
const env = await startTestPlatform(t)

t.test("the README's config validates, applies, and applies again with no change", async (t) => {
  const valid = await env.request('POST', '/api/v1/config/validate', { body: { config } })
  t.match(valid, { status: 200, body: { valid: true, errors: [] } }, valid.text)
  const first = await env.request('POST', '/api/v1/config/apply', { body: { config, dryRun: false } })
  t.match(first, { status: 200, body: { success: true } }, first.text)
  t.ok((first.body as { summary: { created: number } }).summary.created >= 4, 'its resources were created')
  const again = await env.request('POST', '/api/v1/config/apply', { body: { config, dryRun: false } })
  t.match(again, { status: 200, body: { success: true, summary: { created: 0, updated: 0 } } }, again.text)
})

t.test("the README's package previews with its variable and installs", async (t) => {
  const preview = await env.request('POST', '/api/v1/packages/preview', { body: { source: pkg } })
  t.match(preview, { status: 200, body: { requires_input: true } }, preview.text)
  const install = await env.request('POST', '/api/v1/packages/install', {
    body: { source: pkg, variables: { CRM_URL: 'https://crm.example.com' } },
  })
  t.match(install, { status: 200, body: { package: { name: 'crm-tools', version: '1.2.0' } } }, install.text)
})
