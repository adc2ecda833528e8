import type { Principal } from '../auth/principal.ts'
import type { ConfigKind, ConfigTx } from '../feature/config-kinds.ts'
import type { ServiceContext } from '../feature/define.ts'
import type { DocumentResource } from './document-resources.ts'

// PLACEHOLDER of helper "packages" until the apply engine of branch h-configapply is merged: the
// agreed signature only (resolved by taking h-configapply's file whole).
export interface ApplyRequest {
  resources: DocumentResource[]
  managedBy: string
  dryRun: boolean
  force: boolean
  prune: boolean
}
export interface ApplyResult {
  success: boolean
  summary: { created: number; updated: number; unchanged: number; deleted: number }
  changes: {
    action: 'created' | 'updated' | 'deleted' | 'unchanged'
    resourceType: string
    resourceName: string
    fields?: unknown
  }[]
  errors: { path: string; message: string }[]
  warnings: string[]
}
export interface Applier {
  kinds: ReadonlyMap<string, ConfigKind>
  apply(p: Principal, req: ApplyRequest, inTx?: (tx: ConfigTx) => Promise<void>): Promise<ApplyResult>
  current(filter?: { managedBy?: string }): Promise<Record<string, Record<string, unknown>[]>>
}
export function createApplier(_ctx: ServiceContext, _configKinds: ConfigKind[]): Applier {
  throw new Error('apply engine not merged yet')
}
