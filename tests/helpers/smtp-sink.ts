import { simpleParser } from 'mailparser'
import { SMTPServer } from 'smtp-server'

/*
 * A real SMTP server as its own process for the login tests: accepts every message on 127.0.0.1
 * (a free port), prints `ready <port>`, then one `mail <json>` line per message received.
 */
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onData(stream, session, callback) {
    simpleParser(stream, {}, (err, mail) => {
      if (err) {
        callback(err)
        return
      }
      const to = session.envelope.rcptTo.map((r) => r.address)
      const from = session.envelope.mailFrom === false ? null : session.envelope.mailFrom.address
      const html = typeof mail.html === 'string' ? mail.html : ''
      process.stdout.write(
        `mail ${JSON.stringify({ to, from, fromHeader: mail.from?.text ?? '', subject: mail.subject ?? '', text: mail.text ?? '', html, headerKeys: [...mail.headers.keys()] })}\n`,
      )
      callback()
    })
  },
})
server.listen(0, '127.0.0.1', () => {
  const address = server.server.address()
  process.stdout.write(`ready ${String(typeof address === 'object' && address !== null ? address.port : 0)}\n`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
