/*
 * The generated tables of the docs (docs/configuration.md, docs/errors.md) sit between two
 * markers, `<!-- <name>:start -->` and `<!-- <name>:end -->`, so the prose around them stays
 * hand-written while `npm run --silent cli -- config-table --write` (or `error-table --write`)
 * replaces only the table, and a test can compare the file with the generator.
 */

/** Where each generated table lives, relative to the repository root. */
export const DOC_TABLE_FILES = { 'config-table': 'docs/configuration.md', 'error-table': 'docs/errors.md' } as const

const markers = (name: string): RegExp => new RegExp(`(<!-- ${name}:start -->\\n)([\\s\\S]*?)(\\n<!-- ${name}:end -->)`)

/** The table currently between the markers, or null when the markers are missing. */
export function tableBetweenMarkers(text: string, name: string): string | null {
  return markers(name).exec(text)?.[2] ?? null
}

/** `text` with the table between the markers replaced; throws when the markers are missing. */
export function replaceBetweenMarkers(text: string, name: string, table: string): string {
  if (tableBetweenMarkers(text, name) === null) throw new Error(`the markers <!-- ${name}:start/end --> are missing`)
  return text.replace(markers(name), (_m, start: string, _old: string, end: string) => `${start}${table}${end}`)
}
