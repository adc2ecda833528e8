import nodemailer, { type Transporter } from 'nodemailer'
import type { Config } from '../kernel/config.ts'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'

/*
 * Outbound mail through the SMTP_* settings. Without SMTP_HOST, development mode logs the one-time
 * code instead (a warning says so); production refuses otp modes without SMTP (see `checkMailer`).
 */
export interface Mailer {
  sendLoginCode(to: string, code: string, minutes: number): Promise<void>
}

export function checkMailer(config: Config): void {
  if (config.NODE_ENV === 'production' && config.AUTH_MODE.includes('otp') && config.SMTP_HOST === '') {
    throw new AppError(
      500,
      'config.invalid',
      `AUTH_MODE=${config.AUTH_MODE} sends login codes by email: production requires SMTP_HOST (and SMTP_PORT, SMTP_USER, SMTP_PASSWORD)`,
      {
        issues: [{ path: 'SMTP_HOST', message: `required in production when AUTH_MODE is ${config.AUTH_MODE}` }],
      },
    )
  }
}

/** The platform's sender address: `noreply@<SMTP_DOMAIN or DOMAIN or localhost>` (login codes, template emails). */
export function senderAddress(config: Config): string {
  const domain = config.SMTP_DOMAIN !== '' ? config.SMTP_DOMAIN : config.DOMAIN !== '' ? config.DOMAIN : 'localhost'
  return `noreply@${domain}`
}

/** The one SMTP transport configuration (SMTP_*), shared by login codes and template emails; call only with SMTP_HOST set. */
export function smtpTransport(config: Config): Transporter {
  return nodemailer.createTransport({
    host: config.SMTP_HOST,
    port: config.SMTP_PORT,
    secure: config.SMTP_PORT === 465,
    ...(config.SMTP_USER === '' ? {} : { auth: { user: config.SMTP_USER, pass: config.SMTP_PASSWORD } }),
    // STARTTLS is used whenever the server offers it; only production insists on a valid certificate.
    tls: { rejectUnauthorized: config.NODE_ENV === 'production' },
  })
}

export function createMailer(config: Config, log: Logger): Mailer {
  const from = senderAddress(config)
  if (config.SMTP_HOST === '') {
    if (config.AUTH_MODE.includes('otp'))
      log.warn(
        { auth_mode: config.AUTH_MODE },
        'SMTP_HOST is not set: login codes cannot be emailed and are written to this log instead (development only)',
      )
    return {
      async sendLoginCode(to, code) {
        log.warn({ to, code }, 'SMTP_HOST is not set: login code logged instead of emailed (development only)')
      },
    }
  }
  const transport = smtpTransport(config)
  return {
    async sendLoginCode(to, code, minutes) {
      await transport.sendMail({
        from,
        to,
        subject: `Your login code: ${code}`,
        text: `Your login code is ${code}. It is valid for ${String(minutes)} minutes. If you did not try to log in, ignore this message.`,
      })
    },
  }
}
