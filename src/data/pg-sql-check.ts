import type { Piece } from './placeholders.ts'
import { deniedFunction } from './denied-functions.ts'

/*
 * Saved Postgres SQL checked with PostgreSQL's own parser (libpg-query: the server's grammar
 * compiled to WebAssembly), when a query is saved and again before it runs (a query saved before
 * the check existed is refused at run time).
 *
 *  read:  exactly one statement, a SELECT (VALUES, WITH … SELECT, set operations) and nothing in
 *         it that is not a read — no data-modifying WITH, no SELECT … INTO, no FOR UPDATE/SHARE,
 *         no denied function (denied-functions.ts).
 *  write: exactly one statement; not COPY (server files, programs, a data stream the driver does
 *         not speak), not a statement that runs code the check never sees (DO, CREATE FUNCTION,
 *         CREATE EXTENSION, LOAD), reaches outside the database (foreign servers, subscriptions),
 *         changes the server, roles or the session (ALTER SYSTEM, CREATE ROLE, SET, BEGIN/COMMIT,
 *         PREPARE, LISTEN), and no denied function of the server tier (called, or named by DDL
 *         such as CREATE CAST … WITH FUNCTION).
 *
 * The parser sees the SQL as the driver sends it: every `:name` placeholder replaced by `$n`
 * (placeholders.ts, in first-use order like renderPg), so positions are mapped back to the saved
 * text for the messages. A read also comes back as the text to run: its one statement without a
 * trailing `;`, and `generate_series(…)` in FROM rewritten to be produced row by row (below).
 *
 * Checked texts are remembered (a bounded map): the run-time check costs one parse per distinct
 * SQL text and process.
 */
export type Operation = 'read' | 'write'
export type PgSqlCheck = { ok: true; text: string } | { ok: false; message: string }

const WRITE_DENIED: Record<string, string> = {
  CopyStmt: 'COPY (reads or writes server files, runs programs, or streams data the platform does not carry)',
  DoStmt: 'DO (runs code the check never sees)',
  CreateFunctionStmt: 'CREATE FUNCTION/PROCEDURE (defines code the check never sees)',
  CreatePLangStmt: 'CREATE LANGUAGE (loads code into the server)',
  CreateExtensionStmt: 'CREATE EXTENSION (loads code into the server)',
  AlterExtensionStmt: 'ALTER EXTENSION (loads code into the server)',
  AlterExtensionContentsStmt: 'ALTER EXTENSION (changes loaded code)',
  LoadStmt: 'LOAD (loads a shared library into the server)',
  AlterSystemStmt: "ALTER SYSTEM (changes the server's configuration)",
  CreateFdwStmt: 'CREATE FOREIGN DATA WRAPPER (reaches outside the database)',
  AlterFdwStmt: 'ALTER FOREIGN DATA WRAPPER (reaches outside the database)',
  CreateForeignServerStmt: 'CREATE SERVER (reaches outside the database)',
  AlterForeignServerStmt: 'ALTER SERVER (reaches outside the database)',
  CreateForeignTableStmt: 'CREATE FOREIGN TABLE (reaches outside the database)',
  CreateUserMappingStmt: 'CREATE USER MAPPING (reaches outside the database)',
  AlterUserMappingStmt: 'ALTER USER MAPPING (reaches outside the database)',
  ImportForeignSchemaStmt: 'IMPORT FOREIGN SCHEMA (reaches outside the database)',
  CreateSubscriptionStmt: 'CREATE SUBSCRIPTION (connects to another server)',
  AlterSubscriptionStmt: 'ALTER SUBSCRIPTION (connects to another server)',
  CreateEventTrigStmt: 'CREATE EVENT TRIGGER (runs code on every DDL)',
  AlterEventTrigStmt: 'ALTER EVENT TRIGGER (runs code on every DDL)',
  CreateRoleStmt: 'CREATE ROLE (changes roles)',
  AlterRoleStmt: 'ALTER ROLE (changes roles)',
  AlterRoleSetStmt: 'ALTER ROLE … SET (changes roles)',
  DropRoleStmt: 'DROP ROLE (changes roles)',
  GrantRoleStmt: 'GRANT/REVOKE of a role (changes roles)',
  CreateTableSpaceStmt: 'CREATE TABLESPACE (a directory of the server)',
  AlterTableSpaceOptionsStmt: 'ALTER TABLESPACE (a directory of the server)',
  CreatedbStmt: 'CREATE DATABASE (changes the server)',
  DropdbStmt: 'DROP DATABASE (changes the server)',
  AlterDatabaseStmt: 'ALTER DATABASE (changes the server)',
  AlterDatabaseSetStmt: 'ALTER DATABASE … SET (changes the server)',
  VariableSetStmt: 'SET / RESET (changes the session: the platform runs each statement in its own transaction)',
  TransactionStmt: 'BEGIN/COMMIT/ROLLBACK (the platform runs each statement in its own transaction)',
  PrepareStmt: 'PREPARE (session state)',
  ExecuteStmt: 'EXECUTE (runs a prepared statement the check never sees)',
  DeallocateStmt: 'DEALLOCATE (session state)',
  DeclareCursorStmt: 'DECLARE CURSOR (session state)',
  FetchStmt: 'FETCH/MOVE (session state)',
  ClosePortalStmt: 'CLOSE (session state)',
  ListenStmt: 'LISTEN (session state)',
  UnlistenStmt: 'UNLISTEN (session state)',
  DiscardStmt: 'DISCARD (session state)',
  CheckPointStmt: 'CHECKPOINT (controls the server)',
}

// A data-modifying statement inside a read (WITH x AS (INSERT …)) is named by its node type.
const STATEMENT_NAMES: Record<string, string> = {
  InsertStmt: 'INSERT',
  UpdateStmt: 'UPDATE',
  DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE',
}

/** SQL as the driver sends it, and a way back from its byte offsets to characters of the saved SQL. */
interface Rendered {
  text: string
  toSaved(byteOffset: number): number
}

function renderForParse(pieces: readonly Piece[]): Rendered {
  const numbers = new Map<string, number>()
  const segments: { byteStart: number; savedStart: number; text: string | null }[] = []
  let text = ''
  let bytes = 0
  let saved = 0
  for (const p of pieces) {
    let out: string
    if ('text' in p) {
      out = p.text
      segments.push({ byteStart: bytes, savedStart: saved, text: p.text })
      saved += p.text.length
    } else {
      let n = numbers.get(p.param)
      if (n === undefined) {
        n = numbers.size + 1
        numbers.set(p.param, n)
      }
      out = `$${String(n)}`
      segments.push({ byteStart: bytes, savedStart: saved, text: null })
      saved += 1 + p.param.length
    }
    text += out
    bytes += Buffer.byteLength(out)
  }
  return {
    text,
    toSaved(offset) {
      let seg = segments[0]
      for (const s of segments) if (s.byteStart <= offset) seg = s
      if (seg === undefined) return 0
      if (seg.text === null) return seg.savedStart
      return (
        seg.savedStart +
        Buffer.from(seg.text)
          .subarray(0, offset - seg.byteStart)
          .toString().length
      )
    },
  }
}

/** "line 2, column 7" of a character offset in the saved SQL. */
function where(sql: string, charOffset: number): string {
  const before = sql.slice(0, Math.max(0, charOffset))
  const line = before.split('\n').length
  const column = charOffset - before.lastIndexOf('\n')
  return `line ${String(line)}, column ${String(column)}`
}

type Json = Record<string, unknown>
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const strings = (list: unknown): string[] =>
  Array.isArray(list) ? list.flatMap((n) => (isObj(n) && isObj(n['String']) ? [String(n['String']['sval'])] : [])) : []

interface Finding {
  message: string
  location?: number
}

interface SeriesCall {
  /** Byte offset of the call's name in the rendered text. */
  location: number
  alias: string | null
  lateral: boolean
}

/** Walks the parse tree: the first refused construct, and the generate_series calls of FROM lists. */
function inspect(root: unknown, operation: Operation, series: SeriesCall[]): Finding | null {
  let found: Finding | null = null
  const visit = (node: unknown): void => {
    if (found !== null) return
    if (Array.isArray(node)) {
      for (const n of node) visit(n)
      return
    }
    if (!isObj(node)) return
    for (const [key, value] of Object.entries(node)) {
      if (found !== null) return
      if (key === 'FuncCall' && isObj(value)) {
        const name = strings(value['funcname']).at(-1) ?? ''
        const args = Array.isArray(value['args']) ? value['args'].length : 0
        const why = deniedFunction(name, operation, args)
        if (why !== null)
          found = {
            message: `the function ${name}() is not allowed in a ${operation} query: it ${why}`,
            location: Number(value['location']),
          }
      } else if ((key === 'A_Indirection' || key === 'ColumnRef') && isObj(value)) {
        // attribute notation calls a one-argument function: ('/etc/passwd'::text).pg_read_file
        const fields = key === 'ColumnRef' ? strings(value['fields']).slice(1) : strings(value['indirection'])
        for (const f of fields) {
          const why = deniedFunction(f, operation, 1)
          if (why !== null) {
            found = {
              message: `the function ${f}() (called as .${f}) is not allowed in a ${operation} query: it ${why}`,
              location: Number(value['location'] ?? NaN),
            }
            return
          }
        }
      } else if (operation === 'read' && key in STATEMENT_NAMES) {
        found = {
          message: `a read query may not contain ${STATEMENT_NAMES[key] ?? key} (a data-modifying WITH is a write)`,
        }
      } else if (operation === 'read' && key.endsWith('Stmt') && key !== 'SelectStmt') {
        found = { message: `a read query may not contain ${key.replace(/Stmt$/, '')} statements` }
      } else if (operation === 'read' && key === 'lockingClause' && Array.isArray(value) && value.length > 0) {
        found = {
          message: 'a read query may not lock rows (FOR UPDATE / FOR NO KEY UPDATE / FOR SHARE / FOR KEY SHARE)',
        }
      } else if (operation === 'read' && key === 'RangeFunction' && isObj(value)) {
        const call = seriesCall(value)
        if (call !== null) series.push(call)
      }
      visit(value)
    }
  }
  visit(root)
  return found
}

const DML = new Set(['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'MergeStmt', 'SelectStmt', 'CallStmt'])

/**
 * DDL names functions without calling them — `CREATE CAST … WITH FUNCTION pg_read_binary_file(text)`,
 * `CREATE OPERATOR … (function = pg_read_file)`, `CREATE AGGREGATE … (sfunc = lo_import)` — and a
 * later read would call them through a cast or an operator the check cannot see as a call. In such a
 * statement any identifier that is a denied function's name is refused (string constants are not
 * identifiers: they are A_Const nodes, never String ones).
 */
function namedDeniedFunction(root: unknown): { name: string; why: string } | null {
  const visit = (node: unknown): { name: string; why: string } | null => {
    if (Array.isArray(node)) {
      for (const n of node) {
        const hit = visit(n)
        if (hit !== null) return hit
      }
      return null
    }
    if (!isObj(node)) return null
    for (const [key, value] of Object.entries(node)) {
      if (key === 'String' && isObj(value)) {
        const name = String(value['sval'])
        const why = deniedFunction(name, 'write')
        if (why !== null) return { name, why }
      }
      const hit = visit(value)
      if (hit !== null) return hit
    }
    return null
  }
  return visit(root)
}

/**
 * `generate_series(…)` as a FROM item that can be produced row by row. Postgres materializes every
 * function of a FROM list before returning its first row (a FunctionScan fills a tuplestore), so
 * `select * from generate_series(1, 1e9)` would run until the statement timeout whatever the row
 * cap; in a select list the same function is evaluated row by row (ProjectSet) and the cursor's
 * row cap stops it. Only plain calls qualify: one function, no WITH ORDINALITY, no ROWS FROM, no
 * column definition list, at most one column alias — generate_series returns one scalar column,
 * named after the alias or the function, which the rewrite keeps.
 */
function seriesCall(rf: Json): SeriesCall | null {
  if (
    rf['ordinality'] === true ||
    rf['is_rowsfrom'] === true ||
    (Array.isArray(rf['coldeflist']) && rf['coldeflist'].length > 0)
  )
    return null
  const fns = rf['functions']
  if (!Array.isArray(fns) || fns.length !== 1) return null
  const pair = isObj(fns[0]) && isObj(fns[0]['List']) ? fns[0]['List']['items'] : null
  const call = Array.isArray(pair) && isObj(pair[0]) ? pair[0]['FuncCall'] : null
  if (!isObj(call)) return null
  const name = strings(call['funcname'])
  if (name.at(-1) !== 'generate_series' || (name.length === 2 && name[0] !== 'pg_catalog') || name.length > 2)
    return null
  if (call['agg_star'] === true || call['func_variadic'] === true || call['over'] !== undefined) return null
  const alias = isObj(rf['alias']) ? rf['alias'] : null
  if (alias !== null && strings(alias['colnames']).length > 1) return null
  return {
    location: Number(call['location']),
    alias: alias === null ? null : String(alias['aliasname']),
    lateral: rf['lateral'] === true,
  }
}

const quoteIdent = (s: string) => `"${s.replace(/"/g, '""')}"`

interface Parser {
  parse(sql: string): Promise<{ stmts?: { stmt?: unknown; stmt_location?: number; stmt_len?: number }[] }>
  scan(sql: string): Promise<{ tokens: { start: number; end: number; text: string }[] }>
}
let parser: Promise<Parser> | undefined
// Loaded on first use: the WebAssembly module is instantiated at import, and processes that never
// check SQL (the gateway imports the query kind) need not carry it.
const loadParser = (): Promise<Parser> => (parser ??= import('libpg-query') as Promise<Parser>)

/** Rewrites each qualifying generate_series of FROM into `lateral (select generate_series(…) as "col")`. */
async function rewriteSeries(
  p: Parser,
  text: Buffer,
  calls: SeriesCall[],
): Promise<{ text: Buffer; delta: (offset: number) => number }> {
  if (calls.length === 0) return { text, delta: () => 0 }
  const tokens = (await p.scan(text.toString())).tokens
  const spans: { start: number; end: number; replacement: string }[] = []
  for (const c of calls) {
    let i = tokens.findIndex((t) => t.start === c.location)
    if (i === -1) continue
    while (i < tokens.length && tokens[i]?.text !== '(') i++
    let depth = 0
    let end = -1
    for (; i < tokens.length; i++) {
      const t = tokens[i]
      if (t === undefined) break
      if (t.text === '(') depth++
      else if (t.text === ')' && --depth === 0) {
        end = t.end
        break
      }
    }
    if (end === -1) continue
    const call = text.subarray(c.location, end).toString()
    const column = quoteIdent(c.alias ?? 'generate_series')
    // a FROM subquery needs an alias before Postgres 16: the function's own name, as Postgres gives it
    const replacement = `${c.lateral ? '' : 'lateral '}(select ${call} as ${column})${c.alias === null ? ' as generate_series' : ''}`
    spans.push({ start: c.location, end, replacement })
  }
  spans.sort((a, b) => b.start - a.start)
  let out = text
  const applied: typeof spans = []
  for (const s of spans) {
    if (applied.some((a) => s.start < a.end && a.start < s.end)) continue // nested in a rewritten call: leave it
    out = Buffer.concat([out.subarray(0, s.start), Buffer.from(s.replacement), out.subarray(s.end)])
    applied.push(s)
  }
  return {
    text: out,
    delta: (offset) =>
      applied
        .filter((a) => a.end <= offset)
        .reduce((d, a) => d + Buffer.byteLength(a.replacement) - (a.end - a.start), 0),
  }
}

async function check(sql: string, pieces: readonly Piece[], operation: Operation): Promise<PgSqlCheck> {
  const p = await loadParser()
  const r = renderForParse(pieces)
  const refuse = (message: string, byteOffset?: number): PgSqlCheck => ({
    ok: false,
    message:
      byteOffset === undefined || !Number.isFinite(byteOffset) || byteOffset < 0
        ? message
        : `${message} (at ${where(sql, r.toSaved(byteOffset))})`,
  })
  let tree: Awaited<ReturnType<Parser['parse']>>
  try {
    tree = await p.parse(r.text)
  } catch (err) {
    const e = err as { message?: unknown; sqlDetails?: { cursorPosition?: number } }
    const cursor = e.sqlDetails?.cursorPosition
    // the parser's cursor is a character index into the text it was given
    const byte = typeof cursor === 'number' ? Buffer.byteLength(r.text.slice(0, cursor)) : undefined
    return refuse(`PostgreSQL cannot parse the SQL: ${String(e.message)}`, byte)
  }
  const stmts = tree.stmts ?? []
  if (stmts.length !== 1)
    return refuse(
      stmts.length === 0
        ? 'the SQL holds no statement'
        : `a query is exactly one statement; this SQL holds ${String(stmts.length)}`,
      stmts[1]?.stmt_location,
    )
  const [only] = stmts
  const stmt = only?.stmt
  const kind = isObj(stmt) ? (Object.keys(stmt)[0] ?? '') : ''
  const start = only?.stmt_location ?? 0
  if (operation === 'read') {
    if (kind !== 'SelectStmt') {
      const label =
        WRITE_DENIED[kind]?.split(' (')[0] ?? STATEMENT_NAMES[kind] ?? (kind.replace(/Stmt$/, '') || 'not a statement')
      return refuse(`a read query is a SELECT (or VALUES, WITH … SELECT); this is ${label}`, start)
    }
    const select = (stmt as Json)['SelectStmt']
    if (isObj(select) && select['intoClause'] !== undefined)
      return refuse('a read query may not be SELECT … INTO (it creates a table)', start)
  } else if (kind in WRITE_DENIED) {
    return refuse(`a write query may not be ${WRITE_DENIED[kind] ?? kind}`, start)
  }
  if (operation === 'write' && !DML.has(kind)) {
    const named = namedDeniedFunction(stmt)
    if (named !== null)
      return refuse(
        `a write query may not name the function ${named.name}() (${kind.replace(/Stmt$/, '')}): it ${named.why}`,
        start,
      )
  }
  const series: SeriesCall[] = []
  const found = inspect(stmt, operation, series)
  if (found !== null) return refuse(found.message, found.location ?? start)
  const whole = Buffer.from(r.text)
  const end = only?.stmt_len === undefined || only.stmt_len === 0 ? whole.length : start + only.stmt_len
  const rewritten = await rewriteSeries(p, whole, series)
  return { ok: true, text: rewritten.text.subarray(start, end + rewritten.delta(end)).toString() }
}

const MEMO_SIZE = 500
const memo = new Map<string, Promise<PgSqlCheck>>()

/**
 * Checks saved SQL for its operation (pieces: `splitPlaceholders(sql)`). `text`: what the driver
 * runs — the one statement, `$n` for the placeholders in first-use order (the values renderPg binds).
 */
export function checkPostgresSql(sql: string, pieces: readonly Piece[], operation: Operation): Promise<PgSqlCheck> {
  const key = `${operation}\u0000${sql}`
  let found = memo.get(key)
  if (found === undefined) {
    if (memo.size >= MEMO_SIZE) memo.delete(memo.keys().next().value as string)
    found = check(sql, pieces, operation)
    memo.set(key, found)
    found.catch(() => memo.delete(key))
  }
  return found
}
