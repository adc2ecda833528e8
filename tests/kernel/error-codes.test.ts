import { join } from 'node:path'
import t from 'tap'
import { errorCodeInfo, registeredErrorCodes } from '../../src/kernel/error-codes.ts'
import { AppError, fromWire, notFound } from '../../src/kernel/errors.ts'
import { scanErrorCodes } from './error-code-scan.ts'

/* The error-code registry: every code written in the source is registered, AppError refuses the others; docs/errors.md's table is checked in tests/docs/tables.test.ts. */
const root = join(import.meta.dirname, '..', '..')

t.test('every error code used in the source is registered', async (t) => {
  const found = scanErrorCodes(root)
  t.ok(found.length > 100, `the scan finds the codes (${String(found.length)} uses)`)
  const missing = found.filter((f) => errorCodeInfo(f.code) === undefined).map((f) => `${f.code} (${f.where})`)
  t.same(missing, [], 'unregistered codes: add them to src/kernel/error-codes.ts')
})

t.test('AppError refuses an unregistered code, except from another process', async (t) => {
  t.throws(() => new AppError(400, 'no.such_code', 'x'), { message: /unregistered error code no\.such_code/ })
  t.throws(() => notFound('x', 'thing.gone'), { message: /unregistered/ })
  t.equal(fromWire({ status: 418, code: 'newer.code', detail: 'from a newer process' }).code, 'newer.code')
  const e = AppError.of('job.not_found')
  t.same(
    { status: e.status, body: e.toBody() },
    { status: 404, body: { detail: 'job not found', code: 'job.not_found' } },
    'status and message come from the registry',
  )
})

t.test('an internal code answers its default message, not its detail', async (t) => {
  t.same(new AppError(500, 'internal', 'pg: relation "x" does not exist').toBody(), {
    detail: 'internal error',
    code: 'internal',
  })
  t.equal(errorCodeInfo('internal')?.public, false)
})

t.test('every registered code has a status and a message', async (t) => {
  for (const [code, info] of registeredErrorCodes()) {
    t.ok(
      /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/.test(code) && info.status >= 400 && info.status < 600 && info.message !== '',
      code,
    )
  }
})
