import t from 'tap'
import { pooledRandomBytes } from '../../src/kernel/pooled-random.ts'

/* Pooled random bytes (src/kernel/pooled-random.ts): the requested length, never the same bytes twice across refills, copies the caller may keep. */
t.test('values are fresh across pool refills and stay as handed out', async (t) => {
  const seen = new Set<string>()
  const kept: [Buffer, string][] = []
  // 2,000 × 12 bytes crosses the 4 KB pool several times, at offsets that do not divide it
  let wrongLength = 0
  for (let i = 0; i < 2000; i++) {
    const b = pooledRandomBytes(12)
    if (b.length !== 12) wrongLength++
    seen.add(b.toString('hex'))
    if (i % 100 === 0) kept.push([b, b.toString('hex')])
  }
  t.equal(wrongLength, 0)
  t.equal(seen.size, 2000, 'no value handed out twice')
  for (let i = 0; i < 500; i++) pooledRandomBytes(18)
  t.ok(
    kept.every(([b, hex]) => b.toString('hex') === hex),
    'later refills do not change values already handed out',
  )
  t.throws(() => pooledRandomBytes(257), RangeError)
})
