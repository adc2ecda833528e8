import { readFile } from 'node:fs/promises'
import type { Principal } from '../auth/principal.ts'
import type { ServiceContext } from '../feature/define.ts'
import { createApplier } from './apply.ts'
import { documentLimits } from './document-limits.ts'
import { CONFIG_OWNER } from './handlers.ts'
import type { DocumentIssue } from './parse-document.ts'
import { readConfig } from './read-config.ts'

/** `file:line:column: message` per issue, as editors and terminals link them. */
const located = (file: string, issues: readonly { path: string; message: string; line?: number; column?: number }[]) =>
  issues
    .map((i) =>
      i.line === undefined
        ? `${file}: ${i.path === '' ? '' : `${i.path}: `}${i.message}`
        : // the message says where again for the API's readers: once is enough here
          `${file}:${String(i.line)}:${String(i.column ?? 1)}: ${i.message.replace(/ \(line \d+, column \d+\)$/, '')}`,
    )
    .join('\n')

/**
 * AUTO_APPLY_CONFIG: CONFIG_FILE applied as the superadmin, managed by `config`, once the
 * resource role's features are up and before it serves requests. A file that cannot be read or
 * applied stops the start: the error names the file, line and column of each problem.
 */
export async function autoApplyConfig(ctx: ServiceContext, superadmin: Principal): Promise<void> {
  const file = ctx.config.CONFIG_FILE
  if (file === '') throw new Error('AUTO_APPLY_CONFIG is true but CONFIG_FILE is not set')
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    throw new Error(`CONFIG_FILE ${file} cannot be read: ${(err as Error).message}`, { cause: err })
  }
  const applier = createApplier(ctx, [...ctx.configKinds()])
  const { check, doc } = await readConfig(text, process.env, {
    limits: documentLimits(ctx.config),
    applier,
    db: ctx.db,
    principal: superadmin,
    validate: false,
  })
  if (!check.valid)
    throw new Error(`CONFIG_FILE is not a valid config (${String(check.code)}):\n${located(file, check.errors)}`)
  const result = await applier.apply(superadmin, {
    resources: check.resources,
    managedBy: CONFIG_OWNER,
    dryRun: false,
    force: false,
    prune: false,
  })
  if (!result.success) {
    const issues: DocumentIssue[] = result.errors.map((e) => (doc === undefined ? e : doc.issueAt(e.path, e.message)))
    throw new Error(`CONFIG_FILE could not be applied, nothing was:\n${located(file, issues)}`)
  }
  for (const w of result.warnings) ctx.log.warn({ file }, w)
  ctx.log.info({ file, ...result.summary }, 'CONFIG_FILE applied')
}
