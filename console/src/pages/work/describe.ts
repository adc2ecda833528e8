import { ApiError } from '../../api/client.ts'

/** An error as one line for a banner: the API's detail and code, or the exception's message. */
export function describe(err: unknown): string {
  if (err instanceof ApiError) {
    const fields = err.fields.map((f) => `${f.path}: ${f.message}`).join('; ')
    return `${err.message} (${err.code})${fields === '' ? '' : ` — ${fields}`}`
  }
  return err instanceof Error ? err.message : String(err)
}
