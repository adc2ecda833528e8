import type { Config } from '../kernel/config.ts'
import type { FieldIssue } from '../kernel/errors.ts'
import type { SpecCheck } from '../resources/validation.ts'

const MIB = 1024 * 1024

/*
 * A content_filter_function is given the whole file in its job's input (base64 plus its text), and
 * a job travels in one NATS message of at most 1 MB; so a filtered collection takes files up to
 * FILES_CONTENT_FILTER_MAX_BYTES (256 KiB by default, 384 KiB at most). Rather than let a
 * collection promise a larger max_file_size_mb and answer 413 at the upload, its save is refused
 * (422) with the largest value that fits. Streaming the file to the filter would need the runner
 * protocol to carry a file in pieces; it does not.
 */
export function filterCapCheck(config: Pick<Config, 'FILES_CONTENT_FILTER_MAX_BYTES'>): SpecCheck {
  const cap = config.FILES_CONTENT_FILTER_MAX_BYTES
  return (kind, spec): FieldIssue[] => {
    if (
      kind.kind !== 'collection' ||
      spec['content_filter_function'] === null ||
      spec['content_filter_function'] === undefined
    )
      return []
    const mb = spec['max_file_size_mb']
    if (typeof mb !== 'number' || mb * MIB <= cap) return []
    const most = Math.floor((cap / MIB) * 1000) / 1000
    return [
      {
        path: 'max_file_size_mb',
        message: `a collection with a content_filter_function takes files up to FILES_CONTENT_FILTER_MAX_BYTES (${String(cap)} bytes): the filter is given the whole file in one message; set max_file_size_mb to at most ${String(most)}`,
      },
    ]
  }
}
