import t from 'tap'
import { ensureChromium, launchChromium } from '../helpers/chromium.ts'
import { startTestConsole } from '../helpers/console.ts'
import { startTestPlatform } from '../helpers/env.ts'
import { startSmtpSink } from '../helpers/smtp.ts'

/*
 * Sign-in with an emailed code (AUTH_MODE=otp) in a real browser: the form asks for the email,
 * the code arrives at a real SMTP server process, a wrong code is refused with the API's message,
 * the right one signs in. No token is readable by the page afterwards.
 */
t.setTimeout(300_000)
const codeOf = (text: string) => /\b(\d{6})\b/.exec(text)?.[1] ?? ''

const why = ensureChromium()
if (why !== null) {
  t.test('sign-in by emailed code', { skip: why }, async () => {})
} else {
  t.test('sign-in by emailed code (AUTH_MODE=otp)', async (t) => {
    const smtp = await startSmtpSink(t)
    const env = await startTestPlatform(t, {
      AUTH_MODE: 'otp',
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(smtp.port),
      SMTP_DOMAIN: 'test.local',
      OTP_MAX_ATTEMPTS: '3',
    })
    await env.createUser('otp-console@test.local')
    const { base } = await startTestConsole(t, env)
    const browser = await launchChromium()
    t.teardown(() => browser.close())
    const page = await browser.context.newPage()
    await page.goto(`${base}/resources/skills`)
    await page.getByLabel('Email').fill('otp-console@test.local')
    t.equal(await page.getByLabel('Password').count(), 0, 'no password field in otp mode')
    await page.getByRole('button', { name: 'Email me a code' }).click()
    const codeField = page.locator('input[name="otp_code"]')
    await codeField.waitFor()
    const mail = await smtp.next('otp-console@test.local')
    const code = codeOf(mail.text)
    t.match(code, /^\d{6}$/, 'the code arrived by email')

    await codeField.fill(code === '000000' ? '111111' : '000000')
    await page.getByRole('button', { name: 'Verify' }).click()
    await page.locator('.banner-error').waitFor()
    t.match(await page.locator('.banner-error').textContent(), /\(auth\./, "a wrong code: the API's answer")

    await codeField.fill(code)
    await page.getByRole('button', { name: 'Verify' }).click()
    await page.getByRole('navigation', { name: 'Main' }).waitFor()
    await page.getByRole('heading', { name: 'Skills' }).waitFor()
    t.pass('signed in, on the page that was asked for')
    t.ok(
      await page.evaluate("document.cookie === '' && localStorage.length === 0 && sessionStorage.length === 0"),
      'no token a script can read',
    )
  })
}
