import { Type as T } from '@sinclair/typebox'
import { DependencyCreateBody } from '../../schemas/dependencies.ts'
import type { AfterCommit, ConfigCurrent, ConfigKind } from '../feature/config-kinds.ts'
import { bodyChecksum, bodyIssues } from '../feature/config-kind-support.ts'
import type { Config } from '../kernel/config.ts'
import { AppError, invalid, type FieldIssue } from '../kernel/errors.ts'
import { sql } from '../platform/db.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'
import { NAME_RE, normalizeName, normalizeVersion, notAllowedReason } from './installer.ts'

/*
 * Dependencies as a config kind (section `dependencies`, packageable). Key: the normalized
 * package name; body `{package_name, version}` as the request endpoint takes it. Config is applied
 * by an administrator, so a dependency it declares is approved at once (approved by the principal
 * applying it) and installed at the next container reload like any approved request; a changed
 * version is approved again. The checks are the API's: a PEP 508 name, a PEP 440 specifier set,
 * and the installation's allow-list.
 */
const Row = rowType(
  T.Object(
    {
      package_name: T.String(),
      version: T.Union([T.String(), T.Null()]),
      managed_by: T.Union([T.String(), T.Null()]),
      checksum: T.Union([T.String(), T.Null()]),
    },
    { title: 'managed dependency' },
  ),
)

type DependencyBody = { package_name: string; version: string | null }

/** The body as stored: the normalized name, the normalized version (null: any). */
function normalized(body: Readonly<Record<string, unknown>>): DependencyBody {
  const name = typeof body['package_name'] === 'string' ? body['package_name'] : ''
  const v = body['version']
  return {
    package_name: normalizeName(name),
    version: (typeof v === 'string' ? normalizeVersion(v) : null) ?? null,
  }
}
const checksumOf = (body: Readonly<Record<string, unknown>>): string => bodyChecksum(normalized(body))

/** What the request endpoint refuses as malformed, as issues. */
function shapeIssues(body: Readonly<Record<string, unknown>>): FieldIssue[] {
  const issues = bodyIssues(DependencyCreateBody, body)
  if (issues.length > 0) return issues
  if (!NAME_RE.test(String(body['package_name'])))
    return [
      {
        path: 'package_name',
        message: 'a PEP 508 project name: letters, digits, . _ -, starting and ending with a letter or digit',
      },
    ]
  const v = body['version']
  if (normalizeVersion(typeof v === 'string' ? v : null) === undefined)
    return [{ path: 'version', message: 'a PEP 440 specifier set without spaces, e.g. ==1.2.0 or >=1.0,<2' }]
  return []
}

const StatusRow = rowType(
  T.Object({ version: T.Union([T.String(), T.Null()]), status: T.String() }, { title: 'dependency status' }),
)

export function dependencyConfigKind(ctx: { config: Config }): ConfigKind {
  return {
    kind: 'dependency',
    section: 'dependencies',
    packageable: true,
    secretFields: [],
    keyOf: (body) => normalized(body).package_name,
    refs: () => [],
    checksum: checksumOf,
    async validate(_p, body) {
      const issues = shapeIssues(body)
      if (issues.length > 0) return issues
      const reason = notAllowedReason(ctx.config, normalized(body).package_name)
      return reason === null ? [] : [{ path: 'package_name', message: reason }]
    },
    async list(db) {
      const rows = await anyRows(
        db,
        Row,
        sql.unsafe`select package_name, version, managed_by, checksum from dependencies order by package_name`,
      )
      return rows.map((r): ConfigCurrent => {
        const body = normalized(r)
        return { key: r.package_name, body, managedBy: r.managed_by, checksum: r.checksum ?? checksumOf(body) }
      })
    },
    async write(tx, p, body, { managedBy }): Promise<AfterCommit[]> {
      const issues = shapeIssues(body)
      if (issues.length > 0) throw invalid(`invalid dependency ${String(body['package_name'])}`, issues)
      const d = normalized(body)
      const reason = notAllowedReason(ctx.config, d.package_name)
      if (reason !== null) throw new AppError(422, 'dependency.not_allowed', reason)
      const managed = sql.unsafe`managed_by = ${managedBy}, checksum = ${checksumOf(body)}, updated_at = now()`
      const before = await maybeRow(
        tx,
        StatusRow,
        sql.unsafe`select version, status from dependencies where package_name = ${d.package_name} for update`,
      )
      if (before === null)
        await tx.query(sql.unsafe`insert into dependencies (package_name, version, status, requested_by, approved_by, approved_at, managed_by, checksum)
          values (${d.package_name}, ${d.version}, 'approved', ${p.userId}::uuid, ${p.userId}::uuid, now(), ${managedBy}, ${checksumOf(body)})`)
      else if (before.version === d.version && (before.status === 'approved' || before.status === 'installed'))
        await tx.query(sql.unsafe`update dependencies set ${managed} where package_name = ${d.package_name}`)
      // a new version, or a request still pending, rejected or failed: approved (config is an administrator's)
      else
        await tx.query(sql.unsafe`update dependencies set version = ${d.version}, status = 'approved', error = null,
          approved_by = ${p.userId}::uuid, approved_at = now(), ${managed} where package_name = ${d.package_name}`)
      // installed at the next container reload, as every approved request
      return []
    },
    async remove(tx, _p, key) {
      await tx.query(sql.unsafe`delete from dependencies where package_name = ${normalizeName(key)}`)
      return []
    },
  }
}
