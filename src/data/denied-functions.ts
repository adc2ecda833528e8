/*
 * Functions a saved Postgres query may not call, whatever its connection's role may do. On a
 * connection whose role is a superuser (or holds pg_read_server_files / pg_execute_server_program)
 * these read the database server's files, run SQL text the check never saw, reach other servers or
 * control the server; a query author is not the database's administrator. The list is the one the
 * docs/data.md#database-connections-and-queries documents.
 *
 * Names are matched on the last part of the name after case-folding, whatever schema qualifies it
 * (`pg_catalog.pg_read_file`, `public.dblink`, `"PG_READ_FILE"`), and also where Postgres accepts
 * attribute notation for a one-argument call (`('/etc/passwd'::text).pg_read_file`).
 *
 * Two tiers: `server` is refused in reads and writes; `session` only in reads (a read is a read:
 * no locks, notifications or settings outlive it). A write may take an advisory lock (the usual way
 * to serialize writers), send a NOTIFY or set_config: the connection is reset before it goes back
 * to the pool, so nothing of it outlives the statement's transaction.
 */
export type DenyTier = 'server' | 'session'

interface Rule {
  test: (name: string) => boolean
  why: string
  tier: DenyTier
}

const exact = (names: string) => {
  const set = new Set(names.split(/\s+/).filter((n) => n !== ''))
  return (name: string) => set.has(name)
}
const prefix =
  (...prefixes: string[]) =>
  (name: string) =>
    prefixes.some((p) => name.startsWith(p))

const RULES: Rule[] = [
  {
    tier: 'server',
    why: 'reads or lists files of the database server',
    test: (n) =>
      exact(
        'pg_read_file pg_read_binary_file pg_stat_file pg_current_logfile pg_hba_file_rules pg_ident_file_mappings pg_show_all_file_settings pg_logdir_ls',
      )(n) || prefix('pg_ls_', 'pg_file_')(n),
  },
  {
    tier: 'server',
    why: 'works on large objects (lo_import / lo_export read and write server files)',
    test: exact(
      'lo_close lo_creat lo_create lo_export lo_from_bytea lo_get lo_import lo_lseek lo_lseek64 lo_open lo_put lo_tell lo_tell64 lo_truncate lo_truncate64 lo_unlink loread lowrite',
    ),
  },
  {
    tier: 'server',
    why: 'connects to another database server',
    test: (n) => n === 'dblink' || n.startsWith('dblink_'),
  },
  {
    tier: 'server',
    why: 'runs SQL text the check never sees',
    test: (n) =>
      prefix('query_to_xml', 'cursor_to_xml', 'table_to_xml', 'schema_to_xml', 'database_to_xml')(n) || n === 'ts_stat',
  },
  {
    tier: 'server',
    why: 'signals backends or controls the server (configuration, logs, WAL, backups, replication, statistics)',
    test: (n) =>
      exact(
        'pg_terminate_backend pg_cancel_backend pg_signal_backend pg_reload_conf pg_rotate_logfile pg_rotate_logfile_old pg_promote pg_switch_wal pg_switch_xlog ' +
          'pg_create_restore_point pg_backup_start pg_backup_stop pg_start_backup pg_stop_backup pg_log_backend_memory_contexts pg_import_system_collations ' +
          'pg_create_physical_replication_slot pg_create_logical_replication_slot pg_drop_replication_slot pg_copy_physical_replication_slot ' +
          'pg_copy_logical_replication_slot pg_replication_slot_advance pg_sync_replication_slots pg_logical_emit_message pg_stat_statements_reset pg_config',
      )(n) ||
      prefix('pg_stat_reset', 'pg_wal_replay_', 'pg_xlog_replay_', 'pg_replication_origin_', 'pg_logical_slot_')(n),
  },
  {
    tier: 'session',
    why: 'takes or releases an advisory lock (session state a read must not leave behind)',
    test: prefix('pg_advisory_', 'pg_try_advisory_'),
  },
  { tier: 'session', why: 'sends a notification (a read has no effects)', test: exact('pg_notify') },
  { tier: 'session', why: 'changes a setting (a read has no effects)', test: exact('set_config') },
]

/** Why a call of `name` is refused for this operation, or null when it is allowed. */
export function deniedFunction(name: string, operation: 'read' | 'write', argCount?: number): string | null {
  const n = name.toLowerCase()
  // ts_rewrite(query, text) runs its second argument as SQL; the three-tsquery form is pure
  if (n === 'ts_rewrite' && argCount === 2) return 'runs SQL text the check never sees'
  for (const r of RULES) {
    if (r.tier === 'session' && operation === 'write') continue
    if (r.test(n)) return r.why
  }
  return null
}
