import { Type as T } from '@sinclair/typebox'
import { defineRoute, type RouteDef } from '../api/route.ts'
import {
  InstalledPackage,
  PackageByName,
  PackageCreateBody,
  PackageDetails,
  PackageInstallAnswer,
  PackagePreview,
  PackageSourceBody,
  PackageYaml,
} from './packages-schemas.ts'

/* Installable packages (docs/gitops.md#packages): every route is an administrator's. */

const m = { surface: 'management', auth: true, target: 'rpc' } as const
const tags = ['Packages']

export const PACKAGE_ROUTES = {
  preview: defineRoute({
    ...m,
    tags,
    id: 'packages.preview',
    permission: 'platform.packages.install:all',
    method: 'POST',
    path: '/api/v1/packages/preview',
    summary:
      'What installing the package would do (a dry run: nothing is written), with its variable declarations and whether a required one still needs a value (admin)',
    body: PackageSourceBody,
    bodyLimit: 'document',
    response: PackagePreview,
    errors: [403, 413, 422],
  }),
  install: defineRoute({
    ...m,
    tags,
    id: 'packages.install',
    permission: 'platform.packages.install:all',
    method: 'POST',
    path: '/api/v1/packages/install',
    summary:
      'Install a package, or upgrade it in place (what the new version dropped is removed); 409 `package.conflict` when it would overwrite an item another package or the config manages (admin)',
    body: PackageSourceBody,
    bodyLimit: 'document',
    response: PackageInstallAnswer,
    errors: [403, 409, 413, 422],
  }),
  create: defineRoute({
    ...m,
    tags,
    id: 'packages.create',
    permission: 'platform.packages.create:all',
    method: 'POST',
    path: '/api/v1/packages/create',
    summary:
      'A package YAML built from existing resources; secret values are never included (a secret a resource needs becomes a `secret` variable) (admin)',
    body: PackageCreateBody,
    response: PackageYaml,
    errors: [403, 404, 422],
  }),
  list: defineRoute({
    ...m,
    tags,
    id: 'packages.list',
    permission: 'platform.packages.read:all',
    method: 'GET',
    path: '/api/v1/packages',
    summary: 'The installed packages (admin)',
    response: T.Array(InstalledPackage),
    errors: [403],
  }),
  get: defineRoute({
    ...m,
    tags,
    id: 'packages.get',
    permission: 'platform.packages.read:all',
    method: 'GET',
    path: '/api/v1/packages/{name}',
    summary: 'One installed package and the items it manages (admin)',
    params: PackageByName,
    response: PackageDetails,
    errors: [403, 404],
  }),
  uninstall: defineRoute({
    ...m,
    tags,
    id: 'packages.uninstall',
    permission: 'platform.packages.delete:all',
    method: 'DELETE',
    path: '/api/v1/packages/{name}',
    summary:
      'Uninstall: every item the package manages is removed, then its record; an item edited since (detached) stays (admin)',
    params: PackageByName,
    response: T.Object({ package: T.String(), apply: PackageInstallAnswer.properties.apply }),
    errors: [403, 404],
  }),
  export: defineRoute({
    ...m,
    tags,
    id: 'packages.export',
    permission: 'platform.packages.read:all',
    method: 'GET',
    path: '/api/v1/packages/{name}/export',
    summary:
      'The package text as installed (YAML, `application/yaml`), before its variables were substituted: no secret value is in it (admin)',
    params: PackageByName,
    html: true,
    contentType: 'application/yaml; charset=utf-8',
    errors: [403, 404],
  }),
}

export function packageRoutes(): RouteDef[] {
  return Object.values(PACKAGE_ROUTES)
}
