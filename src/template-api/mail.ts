import type { Static } from '@sinclair/typebox'
import type { Transporter } from 'nodemailer'
import type { SendResult } from '../../schemas/template.ts'
import { senderAddress, smtpTransport } from '../identity/mailer.ts'
import type { Config } from '../kernel/config.ts'
import { AppError } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { Rendered } from './render.ts'

/*
 * Template emails through the same SMTP transport settings as login codes (src/identity/mailer.ts).
 * Without SMTP_HOST sending answers 503 `email.not_configured` (unlike login codes, a template
 * email is never written to the log instead: it may hold anything). The subject is the rendered
 * title on one line (line breaks from variables cannot start a new header; nodemailer encodes the
 * rest); no title → the template's name.
 */
export interface TemplateMailer {
  send(message: {
    to: string[]
    fromName: string | undefined
    fallbackSubject: string
    rendered: Rendered
  }): Promise<Static<typeof SendResult>>
}

export function createTemplateMailer(config: Config, log: Logger): TemplateMailer {
  let transport: Transporter | undefined
  const address = config.TEMPLATE_EMAIL_FROM !== '' ? config.TEMPLATE_EMAIL_FROM : senderAddress(config)
  return {
    async send({ to, fromName, fallbackSubject, rendered }) {
      if (config.SMTP_HOST === '')
        throw new AppError(503, 'email.not_configured', 'SMTP_HOST is not set: template emails cannot be sent')
      transport ??= smtpTransport(config)
      const t = transport
      const subject = (rendered.title ?? fallbackSubject).replace(/[\r\n\u2028\u2029]+/g, ' ').trim()
      try {
        const info = await t.sendMail({
          from: fromName === undefined ? address : { name: fromName, address },
          to,
          subject,
          html: rendered.html_content,
          ...(rendered.text_content === null ? {} : { text: rendered.text_content }),
        })
        const rejected = (info.rejected as (string | { address: string })[]).map((r) =>
          typeof r === 'string' ? r : r.address,
        )
        return {
          status: 'sent',
          message_id: String(info.messageId),
          recipients: to.filter((x) => !rejected.includes(x)),
          rejected,
        }
      } catch (err) {
        log.warn({ err, recipients: to.length }, 'template email not accepted by the SMTP server')
        // the SMTP reply code helps the caller; the connection details (host, port) stay in the log
        const code =
          typeof err === 'object' && err !== null && 'responseCode' in err ? ` (SMTP ${String(err.responseCode)})` : ''
        throw new AppError(502, 'email.send_failed', `the SMTP server did not accept the message${code}`, {
          cause: err,
        })
      }
    },
  }
}
