import { AppError } from '../../src/kernel/errors.ts'

/** The AppError a call throws (any other outcome fails the test that asked). */
export function caught(f: () => unknown): AppError {
  try {
    f()
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error('expected an AppError, nothing was thrown')
}

export const LIMITS = { maxBytes: 5 * 1024 * 1024, maxAliasCount: 100, maxDepth: 100 }
