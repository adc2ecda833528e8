import type { Page } from 'playwright-core'
import t from 'tap'
import { ensureChromium, launchChromium } from '../helpers/chromium.ts'
import { startTestConsole, userWithPassword } from '../helpers/console.ts'
import { startTestPlatform } from '../helpers/env.ts'

/*
 * The admin lists in a real browser (console/src/pages/admin/AdminList.tsx under API keys, roles
 * and users): a row created with the page's form shows in its table, and its Delete button asks
 * first (a refusal keeps the row) and then removes it; the users list pages through the URL's offset.
 */
t.setTimeout(600_000)

async function rowCount(page: Page, caption: string, text: string): Promise<number> {
  return page.getByRole('table', { name: caption }).getByRole('row').filter({ hasText: text }).count()
}

const why = ensureChromium()
if (why !== null) {
  t.test('the admin lists in a browser', { skip: why }, async () => {})
} else {
  t.test('the admin lists in a browser: create, delete asked for, paging', async (t) => {
    const env = await startTestPlatform(t, { AUTH_MODE: 'password' })
    const { base } = await startTestConsole(t, env)
    await userWithPassword(env, 'boss@test.local', 'boss-password-1', ['Admins'])
    const browser = await launchChromium()
    t.teardown(() => browser.close())
    const page = await browser.context.newPage()
    const pageErrors: string[] = []
    page.on('pageerror', (e) => pageErrors.push(e.message))
    await page.goto(`${base}/`)
    await page.getByLabel('Email').fill('boss@test.local')
    await page.getByLabel('Password').fill('boss-password-1')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('navigation', { name: 'Main' }).waitFor()

    // API keys: created (the key shown once), listed, a refused delete keeps it, an accepted one removes it
    await page.goto(`${base}/admin/api-keys`)
    await page.getByLabel('Name').fill('ci-key')
    await page.getByRole('button', { name: 'Create API key' }).click()
    await page.getByRole('status').filter({ hasText: 'shown once' }).waitFor()
    await page.getByRole('table', { name: 'API keys' }).getByRole('row').filter({ hasText: 'ci-key' }).waitFor()
    page.once('dialog', (d) => {
      t.equal(d.message(), 'Delete the API key ci-key?')
      void d.dismiss()
    })
    await page.getByRole('button', { name: 'Delete ci-key' }).click()
    t.equal(await rowCount(page, 'API keys', 'ci-key'), 1, 'a refused delete keeps the key')
    page.once('dialog', (d) => void d.accept())
    await page.getByRole('button', { name: 'Delete ci-key' }).click()
    await page.getByRole('table', { name: 'API keys' }).getByRole('row').filter({ hasText: 'ci-key' }).waitFor({
      state: 'detached',
    })
    t.pass('the key is deleted')

    // roles: the same list and Delete, without paging
    await page.goto(`${base}/admin/roles`)
    await page.getByLabel('Name').fill('Auditors')
    await page.getByRole('button', { name: 'Create role' }).click()
    await page.getByRole('table', { name: 'Roles' }).getByRole('row').filter({ hasText: 'Auditors' }).waitFor()
    t.equal(await page.getByRole('navigation', { name: 'Pages' }).count(), 0, 'roles are not paged')
    page.once('dialog', (d) => void d.accept())
    await page.getByRole('button', { name: 'Delete Auditors' }).click()
    await page.getByRole('table', { name: 'Roles' }).getByRole('row').filter({ hasText: 'Auditors' }).waitFor({
      state: 'detached',
    })
    t.pass('the role is deleted')

    // users: 60 of them make two pages; Next moves the URL's offset
    for (let i = 0; i < 60; i++) await env.createUser(`u${String(i).padStart(2, '0')}@test.local`)
    await page.goto(`${base}/admin/users`)
    const pager = page.getByRole('navigation', { name: 'Pages' })
    await pager.waitFor()
    t.match(await pager.textContent(), /1–50/, 'the first page')
    await pager.getByRole('button', { name: 'Next' }).click()
    await page.waitForURL(/offset=50/)
    await pager.getByText(/51–/).waitFor()
    t.pass('the next page, at the offset in the URL')
    t.same(pageErrors, [], 'no uncaught error in the page')
  })
}
