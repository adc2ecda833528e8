import { randomFillSync } from 'node:crypto'

/*
 * Small random values (nonces, IVs) taken from a pool the CSPRNG refills 4 KB at a time, instead
 * of one CSPRNG call each: on a page render one call was ~6 % of the CPU (bench/components.bench.ts).
 * Every byte is handed out once (the pool moves on; a refill overwrites only used bytes), and
 * each value is a copy, so a caller may keep it.
 */
const pool = Buffer.alloc(4096)
let next = pool.length

/** `n` (at most 256) random bytes of the CSPRNG. */
export function pooledRandomBytes(n: number): Buffer {
  if (n > 256) throw new RangeError('pooledRandomBytes: at most 256 bytes')
  if (next + n > pool.length) {
    randomFillSync(pool)
    next = 0
  }
  const out = Buffer.from(pool.subarray(next, next + n))
  next += n
  return out
}
