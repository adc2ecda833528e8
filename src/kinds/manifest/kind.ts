import { ManifestSpec } from '../../../schemas/manifest.ts'
import { isValidPermission } from '../../auth/permissions.ts'
import { defineKind } from '../../resources/kind.ts'

/* Application manifests: what an application needs; its status is src/manifests/. */
export const manifestKind = defineKind({
  kind: 'manifest',
  plural: 'manifests',
  title: 'Manifest',
  description: 'What an application needs: resources, permissions, exposed namespaces and store dependencies.',
  spec: ManifestSpec,
  refs: (s) => [
    ...s.required_resources.map((r) => ({ kind: r.type.replace(/s$/, ''), ref: `${r.namespace}/${r.name}` })),
    ...s.store_dependencies.map((d) => ({ kind: 'store', ref: d.store })),
  ],
  // a permission string the matcher cannot parse would stay "missing" forever: refused when saved
  validate: (s) =>
    (['required_permissions', 'optional_permissions'] as const).flatMap((field) =>
      s[field].flatMap((perm, i) =>
        isValidPermission(perm)
          ? []
          : [
              {
                path: `/${field}/${String(i)}`,
                message: 'not a permission (`platform.<resource>[/<ns>/<name>].<action>:own|all`)',
              },
            ],
      ),
    ),
})
