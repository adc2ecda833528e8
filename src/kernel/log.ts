import { pino, type Logger } from 'pino'
import type { Config } from './config.ts'

export type { Logger }

/**
 * The root logger. Loggers travel in dependency bags (never module singletons elsewhere) and are
 * specialised with `child({ mod })`. Credentials are redacted by path so a logged request or record
 * cannot leak them.
 */
export function createLogger(
  options: { level?: string; svc?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
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
          'config.METRICS_TOKEN',
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

/**
 * The level the platform logs at: LOG_LEVEL, or `debug` when DEBUG is true and LOG_LEVEL was left
 * at its default (`info`); an explicit other LOG_LEVEL wins over DEBUG.
 */
export function logLevelOf(config: Pick<Config, 'LOG_LEVEL' | 'DEBUG'>): string {
  return config.DEBUG && config.LOG_LEVEL === 'info' ? 'debug' : config.LOG_LEVEL
}
