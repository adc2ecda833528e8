import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import t from 'tap'
import { ensureChromium, launchChromium } from '../helpers/chromium.ts'
import { startTestConsole, userWithPassword } from '../helpers/console.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The console in a real browser against a real platform (AUTH_MODE=password): an admin signs in
 * with the form, every page of the navigation opens (a screenshot of each in
 * .tap/console-screenshots/, and axe-core finds no serious or critical violation on it), a skill
 * is created through the generated form — a refused save marks the offending field with the API's
 * message — and deleted; a plain user sees no admin page, gets a clear message at an admin URL and
 * when an action is forbidden. The page holds no token anywhere a script could read.
 */
const SHOTS = join(import.meta.dirname, '..', '..', '.tap', 'console-screenshots')
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[] }[]
}

/** axe-core run in the page (evaluated by the driver: the page's CSP allows no injected script tag). */
async function seriousViolations(page: Page): Promise<string[]> {
  const violations = (await page.evaluate(`(async () => {
    if (!window.axe) { ${AXE}\n }
    const r = await window.axe.run(document, { resultTypes: ['violations'] })
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }))
  })()`)) as AxeViolation[]
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${String(v.impact)}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
}

async function signIn(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('navigation', { name: 'Main' }).waitFor()
}

// a browser, axe on every page, two users: longer than the suite's default on a loaded machine
t.setTimeout(600_000)

const why = ensureChromium()
if (why !== null) {
  t.test('the console in a browser', { skip: why }, async () => {})
} else {
  t.test('the console in a browser: admin pages, forms, a plain user', async (t) => {
    mkdirSync(SHOTS, { recursive: true })
    const env = await startTestPlatform(t, { AUTH_MODE: 'password' })
    const { base } = await startTestConsole(t, env)
    await userWithPassword(env, 'boss@test.local', 'boss-password-1', ['Admins'])
    await userWithPassword(env, 'plain@test.local', 'plain-password-1', ['Users'])
    const browser = await launchChromium()
    t.teardown(() => browser.close())
    const page = await browser.context.newPage()
    await page.setViewportSize({ width: 1280, height: 800 })
    const pageErrors: string[] = []
    page.on('pageerror', (e) => pageErrors.push(e.message))

    await page.goto(`${base}/`)
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    await page.screenshot({ path: join(SHOTS, 'sign-in.png') })
    t.same(await seriousViolations(page), [], 'sign-in: no serious or critical axe violation')

    await signIn(page, base, 'boss@test.local', 'boss-password-1')
    t.ok(
      await page.evaluate("document.cookie === '' && localStorage.length === 0 && sessionStorage.length === 0"),
      'no token a script can read: no readable cookie, nothing in storage',
    )

    const links = await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link')
      .evaluateAll((as) =>
        as.map((a) => ({
          href: (a as unknown as { getAttribute(n: string): string | null }).getAttribute('href') ?? '',
          text: (a as unknown as { textContent: string | null }).textContent ?? '',
        })),
      )
    t.ok(
      links.some((l) => l.href === '/admin/users'),
      'an admin sees the admin pages',
    )
    t.ok(
      links.some((l) => l.href === '/system/health'),
      'and the system pages',
    )
    t.ok(links.length >= 20, `every area's pages (${String(links.length)})`)
    for (const link of links) {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link.text, exact: true }).click()
      await page.waitForURL(`${base}${link.href}`)
      await page.locator('main h1').first().waitFor()
      await page.locator('main [role="status"]').waitFor({ state: 'detached' })
      const name = link.href.replace(/^\//, '').replace(/\//g, '_')
      await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
      t.same(await seriousViolations(page), [], `${link.href}: no serious or critical axe violation`)
    }

    // a skill through the generated form: a refused save marks the field, then a good one
    await page.goto(`${base}/resources/skills`)
    await page.getByText(/No skills yet/).waitFor()
    t.pass('an empty list says what to do next')
    await page.getByRole('link', { name: /Create the first skill/ }).click()
    await page.locator('main [name="name"]').waitFor()
    await page.locator('main [name="namespace"]').fill('docs')
    await page.locator('main [name="name"]').fill('Not A Name!')
    await page.locator('main [name="content"]').fill('# Write short sentences.')
    await page.getByRole('button', { name: 'Create' }).click()
    const nameField = page.locator('main [name="name"]')
    await page.locator('main input[name="name"][aria-invalid="true"]').waitFor()
    t.equal(await nameField.getAttribute('aria-invalid'), 'true', 'the offending field is marked')
    t.match(await page.locator('.field-invalid .field-error').first().textContent(), /\S/, "with the API's message")
    await page.screenshot({ path: join(SHOTS, 'skill-form-error.png'), fullPage: true })
    t.same(await seriousViolations(page), [], 'the form with errors: no serious or critical axe violation')
    await nameField.fill('style')
    await page.getByRole('button', { name: 'Create' }).click()
    await page.waitForURL(`${base}/resources/skills/docs/style`)
    await page.getByRole('heading', { name: 'Skill docs/style' }).waitFor()
    await page.screenshot({ path: join(SHOTS, 'skill-view.png'), fullPage: true })
    t.same(await seriousViolations(page), [], 'a view page: no serious or critical axe violation')
    page.once('dialog', (d) => void d.accept())
    await page.getByRole('button', { name: 'Delete' }).click()
    await page.waitForURL(`${base}/resources/skills`)
    await page.getByText(/No skills yet/).waitFor()
    t.pass('deleted')

    // declarative config: preview shows the plan, apply is offered only for the previewed text
    await page.goto(`${base}/admin/config`)
    const doc = [
      'apiVersion: platform/v1',
      'kind: PlatformConfig',
      'spec:',
      '  skills:',
      '    - namespace: docs',
      '      name: from-config',
      '      description: applied from the console',
      '      content: Short sentences.',
    ].join('\n')
    await page.getByLabel('Config document (YAML)').fill(doc)
    t.ok(await page.getByRole('button', { name: 'Apply' }).isDisabled(), 'no apply before a preview')
    await page.getByRole('button', { name: 'Preview' }).click()
    await page.locator('.plan-summary').waitFor()
    t.match(await page.locator('.plan-summary').textContent(), /Would create 1/, 'the plan: one resource to create')
    t.match(await page.getByRole('table').textContent(), /docs\/from-config|from-config/, 'the plan names it')
    t.equal((await env.request('GET', '/api/v1/skills/docs/from-config')).status, 404, 'a preview writes nothing')
    await page.screenshot({ path: join(SHOTS, 'config-plan.png'), fullPage: true })
    t.same(await seriousViolations(page), [], 'the config plan: no serious or critical axe violation')
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.locator('.plan-summary', { hasText: /^Created 1/ }).waitFor()
    t.equal((await env.request('GET', '/api/v1/skills/docs/from-config')).status, 200, 'applied')
    await page.getByLabel('Config document (YAML)').fill('spec: [')
    await page.getByRole('button', { name: 'Validate' }).click()
    await page.locator('.problems').first().waitFor()
    t.pass('a broken document shows its problems')

    // dark mode
    await page.getByRole('button', { name: 'Dark mode' }).click()
    t.equal(await page.evaluate('document.documentElement.dataset.theme'), 'dark')
    await page.screenshot({ path: join(SHOTS, 'dark-mode.png') })
    t.same(await seriousViolations(page), [], 'dark mode: no serious or critical axe violation')

    // keyboard: the skip link is the first stop and lands in main
    await page.goto(`${base}/resources/skills`)
    await page.locator('main h1').waitFor()
    await page.keyboard.press('Tab')
    t.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content')
    await page.keyboard.press('Enter')
    t.equal(await page.evaluate('document.activeElement?.id'), 'main', 'the skip link lands in main')

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()

    // a plain user
    await signIn(page, base, 'plain@test.local', 'plain-password-1')
    const plainLinks = await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link')
      .evaluateAll((as) =>
        as.map((a) => (a as unknown as { getAttribute(n: string): string | null }).getAttribute('href') ?? ''),
      )
    t.notOk(
      plainLinks.some((h) => h.startsWith('/admin/') || h.startsWith('/system/')),
      'a plain user sees no admin page',
    )
    await page.goto(`${base}/admin/users`)
    await page.getByRole('alert').waitFor()
    t.match(await page.getByRole('alert').textContent(), /for administrators/, 'an admin URL says why it is not shown')
    await page.screenshot({ path: join(SHOTS, 'plain-user-admin-url.png') })
    // a forbidden action: LLM providers are admin-only to create
    await page.goto(`${base}/resources/llm-providers/new`)
    await page.locator('main [name="name"]').fill('mine')
    // a valid body, so the answer is the permission's 403 and not the schema's 422
    await page.locator('main select[name="provider_type"]').selectOption('openai')
    await page.getByRole('button', { name: 'Create' }).click()
    await page.locator('.banner-error').waitFor()
    t.match(
      await page.locator('.banner-error').first().textContent(),
      /You do not have permission for this/,
      'a forbidden action says so',
    )
    await page.screenshot({ path: join(SHOTS, 'plain-user-forbidden.png') })
    t.same(pageErrors, [], 'no uncaught error in the page')
  })
}
