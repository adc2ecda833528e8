import type { Principal } from '../auth/principal.ts'
import { AppError, type FieldIssue } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { ResourceService } from '../resources/service.ts'
import type { Applier, ApplyResult } from './apply.ts'
import { checkPackageText, type PackageCheck } from './check-package.ts'
import type { DocumentLimits } from './document-limits.ts'
import type { DocumentResource } from './document-resources.ts'
import { PACKAGE_PLACEHOLDER } from './package-placeholders.ts'
import { readPlatformIndex, variableResourceExists, type PlatformIndex } from './package-platform-index.ts'
import type { PackageDocument, VariableDeclaration } from './package-schema.ts'
import { secretResources, secretVariableAddress } from './package-secrets.ts'
import { parseYamlDocument } from './parse-document.ts'
import { UNREADABLE } from './read-config.ts'
import { readVariableDeclarations } from './read-variable-declarations.ts'
import { resourceKey } from './resource-key.ts'
import { deletePackage, getPackage, upsertPackage } from './packages-store.ts'

export interface PackageDeps {
  db: Db
  resources: ResourceService
  applier: Applier
  limits: DocumentLimits
  log: Logger
}

type Values = Readonly<Record<string, unknown>>

/** A package's text with its values, checked and turned into the items to apply. */
interface PreparedPackage {
  check: PackageCheck
  declarations: VariableDeclaration[]
  document?: PackageDocument
  /** The document's resources in apply order, the secret variables' secrets first. */
  resources: DocumentResource[]
}

export const packageOwner = (name: string) => `pkg:${name}`

/**
 * Preview, install and uninstall of packages (docs/gitops.md#packages) over the apply engine:
 * the items of a package carry `managed_by: pkg:<name>`; installing again applies the new text
 * with `prune`, so what the new version dropped is removed; the package record is written in the
 * apply's own transaction.
 */
export function packageInstaller(d: PackageDeps) {
  const secretKind = d.resources.kinds.get('secret')

  /**
   * A secret variable given no value keeps the one stored at its address when this package keeps
   * it there (an upgrade does not ask again). Only then: a secret made by hand or by another
   * package would otherwise flow into this package's items, where anyone reading them sees it.
   */
  async function storedSecrets(
    source: string,
    declarations: readonly VariableDeclaration[],
    given: Values,
  ): Promise<Values> {
    const out: Record<string, unknown> = { ...given }
    const secrets = declarations.filter((v) => v.type === 'secret' && given[v.name] === undefined)
    const name = secrets.length === 0 ? undefined : declaredName(source, d.limits)
    if (secretKind === undefined || name === undefined) return out
    for (const decl of secrets) {
      const [row] = await d.resources.loadMany(secretKind, [secretVariableAddress(decl.name).key])
      if (row === undefined || row.managed_by !== packageOwner(name)) continue
      const value = (await d.resources.secretsOf(secretKind, row.id))['value']
      if (value !== undefined && value !== '') out[decl.name] = value
    }
    return out
  }

  async function prepare(p: Principal, source: string, given: Values, index: PlatformIndex): Promise<PreparedPackage> {
    let declarations: VariableDeclaration[] = []
    try {
      declarations = readVariableDeclarations(source, d.limits)
    } catch {
      // the same failure again, as a check
      return {
        check: checkPackageText(source, given, { limits: d.limits, ...checks(index) }),
        declarations,
        resources: [],
      }
    }
    const values = await storedSecrets(source, declarations, given)
    // the secrets the secret variables will keep are there for the package's references to them
    const kept = new Set(
      declarations
        .filter((v) => v.type === 'secret' && (values[v.name] ?? v.default ?? '') !== '')
        .map((v) => secretVariableAddress(v.name).key),
    )
    const base = checks(index)
    const options = {
      limits: d.limits,
      ...base,
      exists: (kind: string, key: string) => (kind === 'secret' && kept.has(key)) || base.exists(kind, key),
    }
    let check = checkPackageText(source, values, options)
    if (check.valid) {
      // each resource against its kind (ConfigKind.validate is async, the document layer's hook is
      // not): found first, then the text checked again with them, for their lines and columns
      const issues = new Map<string, readonly FieldIssue[]>()
      for (const r of check.resources) {
        const kind = d.applier.kinds.get(r.kind)
        const found =
          kind === undefined
            ? [{ path: '', message: 'this kind cannot be applied on this platform' }]
            : await kind.validate(p, r.body)
        if (found.length > 0) issues.set(`${r.kind} ${r.key}`, found)
      }
      if (issues.size > 0)
        check = checkPackageText(source, values, {
          ...options,
          checkResource: (kind, body) => issues.get(`${kind} ${resourceKey(kind, body)}`) ?? [],
        })
    }
    const document = check.document
    if (!check.valid || document === undefined) return { check, declarations, resources: [] }
    const text: Record<string, string> = {}
    for (const decl of declarations) {
      const v = values[decl.name] ?? decl.default
      if (typeof v === 'string') text[decl.name] = v
    }
    const secrets = secretResources(document.package.name, declarations, text)
    return { check, declarations, document, resources: [...secrets, ...check.resources] }
  }

  const checks = (index: PlatformIndex) => ({
    refs: index.refs,
    exists: index.exists,
    resourceExists: (resource: string, ref: string) => variableResourceExists(index, resource, ref),
  })

  /**
   * Items another package or the config manages are never overwritten by a package, forced or not.
   * Read before the apply's lock: a package installed in between is still not overwritten (the
   * apply leaves an item it does not manage as it is, with a warning), only not refused by name.
   */
  function conflicts(name: string, resources: readonly DocumentResource[], index: PlatformIndex): FieldIssue[] {
    const owner = packageOwner(name)
    return resources.flatMap((r) => {
      const managedBy = index.get(r.kind, r.key)?.managedBy ?? null
      if (managedBy === null || managedBy === owner) return []
      const other = managedBy.startsWith('pkg:') ? `package ${managedBy.slice(4)}` : 'the config'
      return [
        {
          path: r.path,
          message: `package ${name} would overwrite ${r.kind} ${r.key}, which ${other} manages (managed_by ${managedBy})`,
        },
      ]
    })
  }

  const failed = (check: PackageCheck): ApplyResult => ({
    success: false,
    summary: { created: 0, updated: 0, unchanged: 0, deleted: 0 },
    changes: [],
    errors: check.errors.map((e) => ({ ...e })),
    warnings: check.warnings,
  })

  return {
    async preview(p: Principal, source: string, given: Values) {
      const index = await readPlatformIndex(d.db, d.applier.kinds)
      const prepared = await prepare(p, source, given, index)
      const answer = (apply: ApplyResult) => ({
        ...apply,
        variables: prepared.declarations,
        requires_input: prepared.check.requiresInput,
      })
      const doc = prepared.document
      const { code, errors } = prepared.check
      // a text that cannot be read as a document at all is refused, as config validate does
      if (code !== undefined && UNREADABLE.has(code)) throw AppError.of(code, errors[0]?.message, { issues: errors })
      if (doc === undefined) return answer(failed(prepared.check))
      const clash = conflicts(doc.package.name, prepared.resources, index)
      if (clash.length > 0) return answer({ ...failed(prepared.check), errors: clash })
      const apply = await d.applier.apply(p, {
        resources: prepared.resources,
        managedBy: packageOwner(doc.package.name),
        dryRun: true,
        force: false,
        prune: true,
      })
      return answer({ ...apply, warnings: [...prepared.check.warnings, ...apply.warnings] })
    },

    async install(p: Principal, source: string, given: Values) {
      const index = await readPlatformIndex(d.db, d.applier.kinds)
      const prepared = await prepare(p, source, given, index)
      const doc = prepared.document
      if (doc === undefined) {
        const { code, errors } = prepared.check
        throw AppError.of(code ?? 'config.invalid_document', errors.map((e) => e.message).join('; '), {
          issues: errors,
        })
      }
      const name = doc.package.name
      const clash = conflicts(name, prepared.resources, index)
      if (clash.length > 0)
        throw AppError.of('package.conflict', clash.map((c) => c.message).join('; '), { issues: clash })
      let record: Awaited<ReturnType<typeof upsertPackage>> | undefined
      const apply = await d.applier.apply(
        p,
        { resources: prepared.resources, managedBy: packageOwner(name), dryRun: false, force: false, prune: true },
        async (tx) => {
          record = await upsertPackage(tx, {
            name,
            version: doc.package.version,
            description: doc.package.description ?? '',
            author: doc.package.author ?? null,
            url: doc.package.url ?? null,
            source,
            values: prepared.check.stored ?? {},
            dependencies: (doc.spec.dependencies ?? []).map((dep) => ({
              package_name: String(dep['package_name']),
              version: typeof dep['version'] === 'string' ? dep['version'] : null,
            })),
            installedBy: p.userId,
          })
        },
      )
      if (!apply.success || record === undefined)
        throw AppError.of('package.install_failed', apply.errors.map((e) => `${e.path}: ${e.message}`).join('; '), {
          issues: apply.errors,
        })
      d.log.info({ package: name, version: doc.package.version, summary: apply.summary }, 'package installed')
      return { package: record, apply: { ...apply, warnings: [...prepared.check.warnings, ...apply.warnings] } }
    },

    /** Every item the package still manages is removed, then its record; an item detached by an edit stays. */
    async uninstall(p: Principal, name: string) {
      if ((await getPackage(d.db, name)) === null) throw notInstalled(name)
      const apply = await d.applier.apply(
        p,
        { resources: [], managedBy: packageOwner(name), dryRun: false, force: false, prune: true },
        async (tx) => {
          await deletePackage(tx, name)
        },
      )
      if (!apply.success)
        throw AppError.of('package.install_failed', apply.errors.map((e) => `${e.path}: ${e.message}`).join('; '), {
          issues: apply.errors,
        })
      d.log.info({ package: name, summary: apply.summary }, 'package uninstalled')
      return { package: name, apply }
    },
  }
}

export const notInstalled = (name: string) => AppError.of('package.not_found', `no package ${name} is installed`)

/** The package name a text declares, read as the variable declarations are (placeholders as bare words); undefined when it has none. */
function declaredName(source: string, limits: DocumentLimits): string | undefined {
  const value = parseYamlDocument(
    source.replace(PACKAGE_PLACEHOLDER, (_m, name: string) => name),
    limits,
  ).value as { package?: { name?: unknown } } | null
  const name = value?.package?.name
  return typeof name === 'string' ? name : undefined
}
