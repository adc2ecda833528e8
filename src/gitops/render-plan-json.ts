import type { FieldChange } from './diff-fields.ts'
import type { Plan, PlanAction } from './plan.ts'

export interface PlanJson {
  summary: Plan['summary']
  changes: { action: PlanAction; resourceType: string; resourceName: string; fields: FieldChange[]; warning?: string }[]
  warnings: string[]
}

/** A plan in the shape the config and package answers carry (`summary`, `changes` with `resourceType` / `resourceName`, `warnings`). */
export function renderPlanJson(plan: Plan): PlanJson {
  return {
    summary: { ...plan.summary },
    changes: plan.changes.map((c) => ({
      action: c.action,
      resourceType: c.kind,
      resourceName: c.key,
      fields: c.fields,
      ...(c.warning === undefined ? {} : { warning: c.warning }),
    })),
    warnings: [...plan.warnings],
  }
}
