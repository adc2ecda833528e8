import { errorCodeInfo } from './error-codes.ts'

/**
 * The one error type of the platform. Every failure that reaches a client is an AppError with a
 * stable dotted `code`, an HTTP `status` and a human `detail`; the body shape is fixed
 * (docs/http-api.md): `{detail, code, errors?}`. Errors cross NATS as plain JSON (`toWire`/`fromWire`)
 * and are matched by code, never by `instanceof`, once they have crossed a process boundary.
 * Every code is registered in `error-codes.ts` (status, default message, public or not): an
 * unregistered code is a programming error and throws at construction.
 */
export interface FieldIssue {
  path: string
  message: string
}

export interface ErrorBody {
  detail: string
  code: string
  errors?: FieldIssue[]
}

export interface WireError extends ErrorBody {
  status: number
}

export class AppError extends Error {
  override name = 'AppError'
  readonly code: string
  readonly status: number
  readonly issues: FieldIssue[] | undefined
  /** Extra response headers (e.g. `retry-after` on 429). */
  headers: Record<string, string> | undefined

  constructor(
    status: number,
    code: string,
    detail: string,
    options: {
      issues?: FieldIssue[]
      cause?: unknown
      /** From another process (fromWire): it may know codes this one does not. */ remote?: boolean
    } = {},
  ) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause })
    if (options.remote !== true && errorCodeInfo(code) === undefined)
      throw new Error(`unregistered error code ${code}: add it to src/kernel/error-codes.ts`)
    this.status = status
    this.code = code
    this.issues = options.issues
  }

  /** An error with the registry's status and (unless given) its default message. */
  static of(code: string, detail?: string, options: { issues?: FieldIssue[]; cause?: unknown } = {}): AppError {
    const info = errorCodeInfo(code)
    if (info === undefined) throw new Error(`unregistered error code ${code}: add it to src/kernel/error-codes.ts`)
    return new AppError(info.status, code, detail ?? info.message, options)
  }

  toBody(): ErrorBody {
    // an internal code's detail may carry internals: the client gets the default message
    const info = errorCodeInfo(this.code)
    const detail = info !== undefined && !info.public ? info.message : this.message
    return this.issues === undefined ? { detail, code: this.code } : { detail, code: this.code, errors: this.issues }
  }

  toWire(): WireError {
    return { ...this.toBody(), status: this.status }
  }
}

export const notFound = (detail: string, code = 'resource.not_found'): AppError => new AppError(404, code, detail)
export const conflict = (detail: string, code = 'resource.conflict'): AppError => new AppError(409, code, detail)
export const invalid = (detail: string, issues?: FieldIssue[], code = 'request.invalid'): AppError =>
  new AppError(422, code, detail, issues === undefined ? {} : { issues })
export const badRequest = (detail: string, code = 'request.bad'): AppError => new AppError(400, code, detail)
export const unauthorized = (detail = 'authentication required', code = 'auth.unauthorized'): AppError =>
  new AppError(401, code, detail)
export const forbidden = (detail = 'not allowed', code = 'auth.forbidden'): AppError => new AppError(403, code, detail)
export const unavailable = (detail: string, code = 'service.unavailable'): AppError => new AppError(503, code, detail)

/** Rebuilds an error that crossed NATS. */
export function fromWire(w: WireError): AppError {
  return new AppError(
    w.status,
    w.code,
    w.detail,
    w.errors === undefined ? { remote: true } : { issues: w.errors, remote: true },
  )
}

/** Anything thrown becomes an AppError; unknown errors are hidden behind a 500 (the cause is kept for logs). */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err
  return new AppError(500, 'internal', 'internal error', { cause: err })
}
