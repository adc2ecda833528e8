import { bind, type BoundRoute } from '../api/bind.ts'
import { can, type Principal } from '../auth/principal.ts'
import { permissionSet } from '../feature/permissions.ts'
import { forbidden } from '../kernel/errors.ts'
import { createPackageYaml } from './package-create.ts'
import { notInstalled, packageInstaller, packageOwner, type PackageDeps } from './package-install.ts'
import { PACKAGE_ROUTES as R } from './packages-routes.ts'
import { getPackage, listPackages, packageSource } from './packages-store.ts'

/** The permissions the package routes check (administrators hold them through `platform.*:all`). */
export const packagePermissions = permissionSet()

const PERMISSIONS = {
  read: packagePermissions.add('platform.packages.read:all', 'list installed packages and export their text (admin)'),
  install: packagePermissions.add(
    'platform.packages.install:all',
    'preview and install packages, which writes every item they hold (admin)',
  ),
  create: packagePermissions.add(
    'platform.packages.create:all',
    'build a package from existing resources, whoever owns them (admin)',
  ),
  delete: packagePermissions.add(
    'platform.packages.delete:all',
    'uninstall packages, which removes every item they manage (admin)',
  ),
}

export function packageHandlers(d: PackageDeps): BoundRoute[] {
  const need = (p: Principal, perm: string) => {
    if (!can(p, perm)) throw forbidden(`requires ${perm}`, 'auth.admin_only')
  }
  const installer = packageInstaller(d)
  return [
    bind(R.preview, async ({ principal: p, body }) => {
      need(p, PERMISSIONS.install)
      return { body: await installer.preview(p, body.source, body.variables ?? {}) }
    }),
    bind(R.install, async ({ principal: p, body }) => {
      need(p, PERMISSIONS.install)
      return { body: await installer.install(p, body.source, body.variables ?? {}) }
    }),
    bind(R.create, async ({ principal: p, body }) => {
      need(p, PERMISSIONS.create)
      return { body: { yaml: await createPackageYaml(d.db, d.applier.kinds, body) } }
    }),
    bind(R.list, async ({ principal: p }) => {
      need(p, PERMISSIONS.read)
      return { body: await listPackages(d.db) }
    }),
    bind(R.get, async ({ principal: p, params: { name } }) => {
      need(p, PERMISSIONS.read)
      const record = await getPackage(d.db, name)
      if (record === null) throw notInstalled(name)
      const owner = packageOwner(name)
      const resources: { type: string; name: string }[] = []
      for (const kind of d.applier.kinds.values())
        for (const item of await kind.list(d.db))
          if (item.managedBy === owner) resources.push({ type: kind.kind, name: item.key })
      return { body: { ...record, resources } }
    }),
    bind(R.uninstall, async ({ principal: p, params: { name } }) => {
      need(p, PERMISSIONS.delete)
      return { body: await installer.uninstall(p, name) }
    }),
    bind(R.export, async ({ principal: p, params: { name } }) => {
      need(p, PERMISSIONS.read)
      const source = await packageSource(d.db, name)
      if (source === null) throw notInstalled(name)
      return { body: source, headers: { 'content-disposition': `inline; filename="${name}.yaml"` } }
    }),
  ]
}
