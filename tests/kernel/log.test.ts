import { Writable } from 'node:stream'
import t from 'tap'
import { createLogger, logLevelOf } from '../../src/kernel/log.ts'

/* Credentials never reach the logs: the paths the platform logs them under are redacted. */
t.test('secrets, passwords, tokens and authorization headers are redacted', async (t) => {
  const lines: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString())
      done()
    },
  })
  const log = createLogger({ level: 'info', destination: sink })
  log.info({ req: { headers: { authorization: 'Bearer eyJ-secret-token', 'x-api-key': 'apk_secret_key' } } }, 'request')
  log.info({ body: { value: 'secret-value-1', api_key: 'sk-secret-2', password: 'hunter2-secret' } }, 'body')
  log.info(
    { provider: { api_key: 'sk-secret-3' }, user: { password: 'pw-secret-4' }, session: { token: 'tok-secret-5' } },
    'nested',
  )
  log.info(
    {
      config: {
        SECRET_KEY: 'sk-secret-6',
        ENCRYPTION_KEY: 'ek-secret-7',
        DATABASE_PASSWORD: 'db-secret-8',
        SMTP_PASSWORD: 'smtp-secret-9',
      },
    },
    'config',
  )
  await new Promise((r) => setImmediate(r))
  const all = lines.join('')
  t.equal(lines.length, 4, 'every line written')
  for (const secret of [
    'eyJ-secret-token',
    'apk_secret_key',
    'secret-value-1',
    'sk-secret-2',
    'hunter2-secret',
    'sk-secret-3',
    'pw-secret-4',
    'tok-secret-5',
    'sk-secret-6',
    'ek-secret-7',
    'db-secret-8',
    'smtp-secret-9',
  ]) {
    t.notOk(all.includes(secret), `${secret} is not in the log`)
  }
  t.match(all, /\[redacted\]/)
})

t.test('DEBUG=true logs at debug unless LOG_LEVEL names another level', async (t) => {
  t.equal(logLevelOf({ DEBUG: false, LOG_LEVEL: 'info' }), 'info')
  t.equal(logLevelOf({ DEBUG: true, LOG_LEVEL: 'info' }), 'debug', 'DEBUG lowers the default level')
  t.equal(logLevelOf({ DEBUG: true, LOG_LEVEL: 'warn' }), 'warn', 'an explicit LOG_LEVEL wins')
  t.equal(logLevelOf({ DEBUG: false, LOG_LEVEL: 'trace' }), 'trace')
})
