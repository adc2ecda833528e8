import type { FieldIssue } from '../kernel/errors.ts'
import type { SpecCheck } from '../resources/validation.ts'

/*
 * A connector's operation count against CONNECTOR_MAX_OPERATIONS: a setting, so it is the
 * connectors feature's check rather than the kind description's (which holds no configuration).
 */
export function operationCapCheck(maxOperations: number): SpecCheck {
  return (kind, spec): FieldIssue[] => {
    const operations = spec['operations']
    if (kind.kind !== 'connector' || !Array.isArray(operations) || operations.length <= maxOperations) return []
    return [{ path: 'operations', message: `at most ${String(maxOperations)} operations (CONNECTOR_MAX_OPERATIONS)` }]
  }
}
