import type { DocumentResource } from './document-resources.ts'
import type { VariableDeclaration } from './package-schema.ts'

/*
 * A package's `secret` variable is kept as a secret resource (encrypted by the resource engine),
 * `default/<name in lower case>`: API_KEY → `default/api_key`. The package installs it with its
 * other items (managed by `pkg:<name>`), so uninstall removes it; an upgrade that gives no value
 * for it reads it back from there instead of asking again. A resource of the package refers to it
 * by that name (`secret: default/api_key`) or takes the value through `${{ variables.API_KEY }}`.
 */

/** Where a secret variable's value is kept. */
export function secretVariableAddress(variable: string): { namespace: string; name: string; key: string } {
  const lower = variable.toLowerCase()
  // a resource name starts with a letter or digit; a variable may start with `_`
  const name = (/^[a-z0-9]/.test(lower) ? lower : `v${lower}`).slice(0, 63)
  return { namespace: 'default', name, key: `default/${name}` }
}

/** The variable a secret `default/<name>` is kept for, when the name can be one (package create). */
export function variableOfSecret(key: string): string | undefined {
  const m = /^default\/([a-z_][a-z0-9_]*)$/.exec(key)
  return m?.[1]?.toUpperCase()
}

/** The secret resources of a package's `secret` variables that have a value, to apply with its other items. */
export function secretResources(
  packageName: string,
  declarations: readonly VariableDeclaration[],
  values: Readonly<Record<string, string>>,
): DocumentResource[] {
  const out: DocumentResource[] = []
  declarations.forEach((d, index) => {
    const value = values[d.name]
    if (d.type !== 'secret' || value === undefined || value === '') return
    const at = secretVariableAddress(d.name)
    out.push({
      section: 'secrets',
      index,
      kind: 'secret',
      key: at.key,
      path: `spec.variables[${String(index)}]`,
      body: {
        namespace: at.namespace,
        name: at.name,
        description: d.description ?? `the ${d.name} variable of package ${packageName}`,
        value,
      },
    })
  })
  return out
}
