import pg from 'pg'

/*
 * Statements on the test cluster's `postgres` database: creating and dropping the databases that
 * test files use. A drop is bounded: DROP DATABASE waits for a checkpoint and for every backend of
 * the cluster to answer a barrier, which under a full suite's load can take long; a teardown that
 * waits without end hangs its whole file (the run's cluster is removed at the end anyway).
 */
const DROP_BOUND_MS = 30_000

export async function adminQuery(base: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${base}/postgres` })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

/** Drops `database` (its sessions ended first); gives up with a printed reason after 30 s. */
export async function dropDatabase(base: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${base}/postgres` })
  await client.connect()
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<'slow'>((resolve) => (timer = setTimeout(() => resolve('slow'), DROP_BOUND_MS)))
  try {
    const r = await Promise.race([client.query(`drop database if exists ${database} with (force)`), bound])
    if (r === 'slow')
      process.stdout.write(
        `# drop database ${database} did not finish within ${String(DROP_BOUND_MS)} ms; left to the end of the run\n`,
      )
  } finally {
    clearTimeout(timer)
    // end() would wait for the drop; a slow one is abandoned with its connection
    await Promise.race([client.end(), bound.then(() => undefined)]).catch(() => undefined)
  }
}
