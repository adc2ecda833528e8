/*
 * The hashing every process must agree on forever: a key's partition and a partition's owner.
 * Partition = FNV-1a-32(key) mod P, bit-identical to nats-server's `{{partition(P,…)}}` subject
 * mapping, so a server-side mapping can take over without reshuffling keys.
 * Owner = rendezvous (highest random weight) hashing over the live hosts; raw FNV-1a is poorly
 * mixed for short similar host ids, so the score goes through murmur3's fmix32 finalizer.
 */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5
  const bytes = new TextEncoder().encode(text)
  for (const b of bytes) {
    h ^= b
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}

export function fmix32(input: number): number {
  let h = input >>> 0
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b) >>> 0
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35) >>> 0
  h ^= h >>> 16
  return h >>> 0
}

export const partitionOf = (key: string, partitions: number): number => fnv1a32(key) % partitions

/** The host that should own partition `p` of actor type `type`, among `hosts` (sorted or not). */
export function rendezvousOwner(hosts: readonly string[], type: string, p: number): string | undefined {
  let best: string | undefined
  let bestScore = -1
  for (const h of hosts) {
    const score = fmix32(fnv1a32(`${h}|${type}|${String(p)}`))
    if (score > bestScore || (score === bestScore && best !== undefined && h < best)) {
      best = h
      bestScore = score
    }
  }
  return best
}
