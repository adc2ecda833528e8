import t from 'tap'
import { ensureChromium, launchChromium } from '../helpers/chromium.ts'
import { startTestConsole, userWithPassword } from '../helpers/console.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { startSmtpSink } from '../helpers/smtp.ts'

/*
 * Sign-in with a password and then an emailed code (AUTH_MODE=password+otp) in a real browser:
 * a wrong password is refused before any code is sent; the right one sends the code, which signs in.
 */
t.setTimeout(300_000)
const codeOf = (text: string) => /\b(\d{6})\b/.exec(text)?.[1] ?? ''

const why = ensureChromium()
if (why !== null) {
  t.test('sign-in by password and code', { skip: why }, async () => {})
} else {
  t.test('sign-in by password and emailed code (AUTH_MODE=password+otp)', async (t) => {
    const smtp = await startSmtpSink(t)
    const env = await startTestPlatform(t, {
      AUTH_MODE: 'password+otp',
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(smtp.port),
      SMTP_DOMAIN: 'test.local',
    })
    await userWithPassword(env, 'both-console@test.local', 'both-password-1')
    const { base } = await startTestConsole(t, env)
    const browser = await launchChromium()
    t.teardown(() => browser.close())
    const page = await browser.context.newPage()
    await page.goto(`${base}/`)
    await page.getByLabel('Email').fill('both-console@test.local')
    await page.getByLabel('Password').fill('wrong-password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('.banner-error').waitFor()
    t.match(await page.locator('.banner-error').textContent(), /auth\.invalid_credentials/, 'a wrong password')
    t.same(smtp.received('both-console@test.local'), [], 'and no code sent')

    await page.getByLabel('Password').fill('both-password-1')
    await page.getByRole('button', { name: 'Sign in' }).click()
    const codeField = page.locator('input[name="otp_code"]')
    await codeField.waitFor()
    const code = codeOf((await smtp.next('both-console@test.local')).text)
    await codeField.fill(code)
    await page.getByRole('button', { name: 'Verify' }).click()
    await page.getByRole('navigation', { name: 'Main' }).waitFor()
    t.match(await page.locator('.user').textContent(), /both-console@test\.local/, 'signed in')
  })
}
