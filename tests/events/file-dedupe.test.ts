import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { fileDedupe } from '../../src/events/client/file-dedupe.ts'

/*
 * The file de-dup store on its own (no platform): keys survive a reopen, expire after the TTL (and
 * leave the file when it is rewritten), a line cut short by a crash is skipped, and the file is
 * compacted once expired lines pile up.
 */
const dir = mkdtempSync(join(tmpdir(), 'file-dedupe-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
let clock = 1_000_000
const now = () => clock

t.test('keys survive a reopen and expire after the TTL', async (t) => {
  const file = join(dir, 'a', 'keys')
  const a = fileDedupe(file, { ttlMs: 1_000, now })
  await a.add?.('x.1')
  clock += 600
  await a.add?.('y.2')
  t.equal(await a.has('x.1'), true)
  t.equal(await a.has('nope'), false)
  await a.close?.()
  // a crash in the middle of a line: its remains are skipped
  appendFileSync(file, '1000900')
  const b = fileDedupe(file, { ttlMs: 1_000, now })
  t.equal(await b.has('x.1'), true, 'kept across a reopen')
  clock += 500
  t.equal(await b.has('x.1'), false, 'x.1 expired (1.1 s old)')
  t.equal(await b.has('y.2'), true, 'y.2 still kept')
  await b.close?.()
  const c = fileDedupe(file, { ttlMs: 1_000, now })
  await c.close?.()
  t.same(
    readFileSync(file, 'utf8'),
    `${String(1_000_600)} y.2\n`,
    'the reopen rewrote the file with the kept keys only',
  )
})

t.test('the file is compacted when expired lines pile up', async (t) => {
  const file = join(dir, 'b.keys')
  const s = fileDedupe(file, { ttlMs: 10, now })
  for (let i = 0; i < 3_000; i++) {
    clock += 1
    await s.add?.(`k.${String(i)}`)
  }
  await s.close?.()
  const lines = readFileSync(file, 'utf8').trim().split('\n').length
  t.ok(lines < 1_200, `${String(lines)} lines for 10 kept keys after 3000 adds`)
  t.rejects(s.add?.('late') ?? Promise.resolve(), /closed/, 'a closed store takes no key')
})
