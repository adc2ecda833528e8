import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { TABLE_END, TABLE_START, withTable } from '../../bench/lib/readme-table.ts'

/*
 * `npm run bench` writes its table into bench/README.md between two markers: the README has them
 * (once each, in order), and a write replaces only what is between them.
 */
t.test('the bench table goes between the markers of bench/README.md, and only there', async (t) => {
  const readme = readFileSync(join(import.meta.dirname, '../../bench/README.md'), 'utf8')
  const once = withTable(readme, ['| a | b |'])
  t.ok(once.includes(`${TABLE_START}\n| a | b |\n${TABLE_END}`), 'the rows between the markers')
  t.equal(
    withTable(once, ['| c |']).replace('| c |', '| a | b |'),
    once,
    'a second write replaces the first, nothing else moves',
  )
  t.equal(
    once.slice(0, once.indexOf(TABLE_START)),
    readme.slice(0, readme.indexOf(TABLE_START)),
    'the text before is kept',
  )
  t.equal(once.slice(once.indexOf(TABLE_END)), readme.slice(readme.indexOf(TABLE_END)), 'the text after is kept')
  t.throws(() => withTable('no markers here', []), /needs the markers/)
  t.throws(() => withTable(`${TABLE_END}\n${TABLE_START}`, []), /needs the markers/, 'markers in the wrong order')
  t.throws(() => withTable(`${TABLE_START}${TABLE_START}${TABLE_END}`, []), /needs the markers/, 'a marker twice')
})
