/** `p`'s outcome, or null when it takes longer than `ms` (the timer is cleared either way). */
export async function within<V>(p: Promise<V>, ms: number): Promise<{ value: V } | null> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      p.then((value) => ({ value })),
      new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms))),
    ])
  } finally {
    clearTimeout(timer)
  }
}
