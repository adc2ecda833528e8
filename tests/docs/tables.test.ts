import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { configTable } from '../../src/kernel/config.ts'
import { DOC_TABLE_FILES, replaceBetweenMarkers, tableBetweenMarkers } from '../../src/kernel/doc-table.ts'
import { errorTable } from '../../src/kernel/error-codes.ts'

/*
 * The settings and error-code tables of the docs are generated; a setting or a code added without
 * regenerating them would leave the docs wrong without anyone noticing. Regenerate with
 * `npm run --silent cli -- config-table --write` / `error-table --write`.
 */
const ROOT = join(import.meta.dirname, '..', '..')

for (const [name, generate] of [
  ['config-table', configTable],
  ['error-table', errorTable],
] as const) {
  t.test(`${DOC_TABLE_FILES[name]} holds the current ${name} (npm run --silent cli -- ${name} --write)`, async (t) => {
    const text = readFileSync(join(ROOT, DOC_TABLE_FILES[name]), 'utf8')
    const table = tableBetweenMarkers(text, name)
    t.not(table, null, `${DOC_TABLE_FILES[name]} has the ${name} markers`)
    t.equal(table, generate())
  })
}

t.test('the markers: only the table between them is replaced', async (t) => {
  const text = 'intro\n<!-- x:start -->\nold\n<!-- x:end -->\noutro\n'
  t.equal(replaceBetweenMarkers(text, 'x', 'new'), 'intro\n<!-- x:start -->\nnew\n<!-- x:end -->\noutro\n')
  t.equal(tableBetweenMarkers('no markers', 'x'), null)
  t.throws(() => replaceBetweenMarkers('no markers', 'x', 'new'), /markers/)
})
