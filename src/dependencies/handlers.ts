import { bind, type BoundRoute } from '../api/bind.ts'
import { can, type Principal } from '../auth/principal.ts'
import { permissionSet } from '../feature/permissions.ts'
import type { Config } from '../kernel/config.ts'
import { AppError, conflict, forbidden, invalid, notFound } from '../kernel/errors.ts'
import { Dependency } from '../../schemas/dependencies.ts'
import { sql, type Db } from '../platform/db.ts'
import { anyRows, maybeRow, rowType } from '../platform/typed-rows.ts'
import { NAME_RE, normalizeName, normalizeVersion, notAllowedReason } from './installer.ts'
import { DEPENDENCY_ROUTES as R } from './routes.ts'

/** The permissions this module checks, for the reference (its feature contributes the list). */
export const dependencyPermissions = permissionSet()

/*
 * `/api/v1/dependencies`: users request a package, an admin approves or rejects it; approved
 * packages are installed by `installApprovedPackages` (installer.ts) when the containers are
 * reloaded. Names and version specs are checked strictly here because they end up as pip
 * arguments (and again in the installer).
 */
export const DEPENDENCY_PERMISSIONS = {
  read: dependencyPermissions.add(
    'platform.dependencies.read:all',
    'list Python package requests and their status (admin)',
  ),
  create: dependencyPermissions.add(
    'platform.dependencies.create:own',
    'request Python packages (installed once an admin approves them)',
  ),
  update: dependencyPermissions.add('platform.dependencies.update:all', 'reject Python package requests (admin)'),
  // approving is what makes a package installed into every sandbox: its own verb
  install: dependencyPermissions.add(
    'platform.dependencies.install:all',
    'approve Python package requests, which installs them at the next reload (admin)',
  ),
  delete: dependencyPermissions.add('platform.dependencies.delete:all', 'delete Python package requests (admin)'),
}

/* A row of `dependencies` is the API's Dependency (timestamps as ISO strings: src/platform/db.ts). */
const DependencyRow = rowType(Dependency)

const notAllowed = (detail: string) => new AppError(422, 'dependency.not_allowed', detail)

export function dependencyHandlers(d: { db: Db; config: Config }): BoundRoute[] {
  const { db, config } = d
  const need = (p: Principal, perm: string) => {
    if (!can(p, perm)) throw forbidden(`requires ${perm}`)
  }
  const columns = sql.unsafe`id, package_name, version, status, error, requested_by, approved_by, created_at, updated_at, approved_at, installed_at`
  const byId = async (id: string) => {
    const row = await maybeRow(
      db,
      DependencyRow,
      sql.unsafe`select ${columns} from dependencies where id = ${id}::uuid`,
    )
    if (row === null) throw notFound('dependency not found', 'dependency.not_found')
    return row
  }

  return [
    bind(R.list, async ({ principal: p, query: { status } }) => {
      need(p, DEPENDENCY_PERMISSIONS.read)
      const where = status === undefined ? sql.unsafe`` : sql.unsafe`where status = ${status}`
      return {
        body: await anyRows(
          db,
          DependencyRow,
          sql.unsafe`select ${columns} from dependencies ${where} order by package_name`,
        ),
      }
    }),

    // the requester follows its own request; everyone else's answers 404 like a missing one
    bind(R.get, async ({ principal: p, params }) => {
      const row = await byId(params.id)
      if (row.requested_by !== p.userId && !can(p, DEPENDENCY_PERMISSIONS.read))
        throw notFound('dependency not found', 'dependency.not_found')
      return { body: row }
    }),

    bind(R.create, async ({ principal: p, body: b }) => {
      need(p, DEPENDENCY_PERMISSIONS.create)
      const raw = b.package_name
      if (!NAME_RE.test(raw))
        throw invalid('invalid package name', [
          {
            path: '/package_name',
            message: 'a PEP 508 project name: letters, digits, . _ -, starting and ending with a letter or digit',
          },
        ])
      const version = normalizeVersion(b.version)
      if (version === undefined)
        throw invalid('invalid version spec', [
          { path: '/version', message: 'a PEP 440 specifier set without spaces, e.g. ==1.2.0 or >=1.0,<2' },
        ])
      const name = normalizeName(raw)
      const reason = notAllowedReason(config, name)
      if (reason !== null) throw notAllowed(reason)
      const row = await maybeRow(
        db,
        DependencyRow,
        sql.unsafe`insert into dependencies (package_name, version, requested_by) values (${name}, ${version}, ${p.userId}::uuid)
        on conflict (package_name) do nothing returning ${columns}`,
      )
      if (row === null) throw conflict(`${name} was already requested`, 'dependency.exists')
      return { status: 201, body: row }
    }),

    bind(R.approve, async ({ principal: p, params: { id } }) => {
      need(p, DEPENDENCY_PERMISSIONS.install)
      const row = await byId(id)
      const reason = notAllowedReason(config, row.package_name)
      if (reason !== null) throw notAllowed(reason)
      if (row.status === 'approved' || row.status === 'installed') return { body: row }
      await db.query(
        sql.unsafe`update dependencies set status = 'approved', error = null, approved_by = ${p.userId}::uuid, approved_at = now(), updated_at = now() where id = ${id}::uuid`,
      )
      return { body: await byId(id) }
    }),

    bind(R.reject, async ({ principal: p, params: { id } }) => {
      need(p, DEPENDENCY_PERMISSIONS.update)
      await byId(id)
      await db.query(
        sql.unsafe`update dependencies set status = 'rejected', approved_by = null, approved_at = null, managed_by = null, checksum = null, updated_at = now() where id = ${id}::uuid`,
      )
      return { body: await byId(id) }
    }),

    bind(R.delete, async ({ principal: p, params: { id } }) => {
      need(p, DEPENDENCY_PERMISSIONS.delete)
      const gone = await db.maybeOneFirst(sql.unsafe`delete from dependencies where id = ${id}::uuid returning id`)
      if (gone === null) throw notFound('dependency not found', 'dependency.not_found')
      return { status: 204 }
    }),
  ]
}
