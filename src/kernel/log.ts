import { pino, type Logger } from 'pino'

export type { Logger }

/**
 * The root logger. Loggers travel in dependency bags (never module singletons elsewhere) and are
 * specialised with `child({ mod })`. Credentials are redacted by path so a logged request or record
 * cannot leak them.
 */
export function createLogger(options: { level?: string; svc?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  return pino(
    {
    level: options.level ?? process.env['LOG_LEVEL'] ?? 'info',
    base: { svc: options.svc ?? 'platform' },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        '*.api_key',
        '*.password',
        '*.secret',
        '*.token',
        'config.SECRET_KEY',
        'config.ENCRYPTION_KEY',
        'config.DATABASE_PASSWORD',
        'config.SUPERADMIN_PASSWORD',
        'config.SMTP_PASSWORD',
        'config.ENCRYPTION_KEY_PREVIOUS',
        // secret values (secrets kind) and credentials in request bodies
        'body.value',
        'body.api_key',
        'body.password',
      ],
      censor: '[redacted]',
    },
    },
    options.destination ?? process.stdout,
  )
}
