import pg from 'pg'

/** Committed transactions of a database so far (`pg_stat_database`): how often a measured route reached Postgres. */
export async function committedTransactions(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const r = await client.query<{ n: string }>(
      'select xact_commit::text as n from pg_stat_database where datname = current_database()',
    )
    return Number(r.rows[0]?.n ?? 0)
  } finally {
    await client.end()
  }
}
