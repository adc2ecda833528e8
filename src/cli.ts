import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { issueAccessToken } from './auth/tokens.ts'
import { configTable, loadConfig } from './kernel/config.ts'
import { errorTable } from './kernel/error-codes.ts'
import { DOC_TABLE_FILES, replaceBetweenMarkers } from './kernel/doc-table.ts'
import { createLogger, logLevelOf } from './kernel/log.ts'
import { createDb, migrate, sql } from './platform/db.ts'
import { createSecretBox, previousKeys } from './kernel/crypto.ts'
import { reencryptSecrets } from './access/reencrypt.ts'
import { FEATURES } from './features.ts'
import { featureKinds, featureRoutes, registerFeatureErrorCodes } from './feature/collect.ts'
import { ensureConsoleBuild } from './console/build.ts'
import { API_TYPES_FILE, consoleApiTypes } from './console/generate.ts'
import { consoleBuildDir } from './roles/console.ts'
import { databaseUrlOf, rolesOf, startConsole, startPlatform, VERSION } from './main.ts'
import type { ConsoleServer } from './console/server.ts'

/*
 * The one command line: `start` (what `npm start` runs), `token` (mints an access token for the
 * superadmin or another user: `npm run token`), `migrate`, `config-table`, `error-table`,
 * `console-api` (the console's generated API types), `console-build` (the console's static files).
 * Output for people goes to stdout; logs go through pino.
 */
const out = (s: string) => process.stdout.write(`${s}\n`)

async function start(): Promise<void> {
  const config = loadConfig()
  const log = createLogger({ level: logLevelOf(config) })
  const startedAt = performance.now()
  const roles = rolesOf(config)
  if (roles.size === 1 && roles.has('console')) return startConsoleOnly(config, log, startedAt)
  const platform = await startPlatform(config, log)
  let consoleServer: ConsoleServer | undefined
  try {
    if (roles.has('console')) consoleServer = await startConsole(config, log, platform.gateway?.port)
  } catch (err) {
    await platform.close()
    throw err
  }
  const base = `http://localhost:${String(platform.gateway?.port ?? config.PORT)}`
  out('')
  out(`Agent platform ${VERSION} is up in ${String(Math.round(performance.now() - startedAt))} ms`)
  if (platform.gateway !== undefined) {
    out(`  API            ${base}   (health: ${base}/health)`)
    out(`  API docs       ${base}/docs  ·  ${base}/api/v1/docs  ·  ${base}/adapters/openai/docs`)
  }
  if (consoleServer !== undefined) out(`  Console        http://localhost:${String(consoleServer.port)}`)
  out(
    `  NATS           ${platform.natsUrl}${config.NATS_URL === '' ? '  (local nats-server, data in ' + join(config.DATA_DIR, 'nats') + ')' : ''}`,
  )
  if (platform.databaseUrl !== undefined)
    out(
      `  Postgres       ${decodeURIComponent(platform.databaseUrl.replace(/:[^:@/]+@/, ':***@'))}${databaseUrlOf(config) === undefined ? '  (local cluster, data in ' + join(config.DATA_DIR, 'pg') + ')' : ''}`,
    )
  out(`  Superadmin     ${config.SUPERADMIN_EMAIL}`)
  out(`  Access token   npm run token`)
  out('  Stop           Ctrl-C')
  out('')
  let stopping = false
  // The last resort: the local servers get their stop signal even when the exit is forced.
  const forceExit = () => {
    platform.abort()
    process.exit(1)
  }
  const stop = (signal: string) => {
    // Ctrl-C under `npm start` arrives twice (the terminal signals the process group, and npm
    // forwards it to its child): the second one is not an "exit now".
    if (stopping) return
    stopping = true
    log.info({ signal }, 'shutting down')
    // close() bounds its own steps (src/roles/lifecycle.ts STOP_BUDGET_MS); this only catches a bug there.
    const force = setTimeout(forceExit, 15_000)
    force.unref()
    void (consoleServer?.close() ?? Promise.resolve())
      .then(() => platform.close())
      .then(() => {
        log.info('stopped')
        process.exit(0)
      })
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
}

/** ROLES=console: the console alone, proxying to CONSOLE_API_URL (no NATS, no database). */
async function startConsoleOnly(
  config: ReturnType<typeof loadConfig>,
  log: ReturnType<typeof createLogger>,
  startedAt: number,
) {
  const server = await startConsole(config, log)
  out('')
  out(`Agent platform console ${VERSION} is up in ${String(Math.round(performance.now() - startedAt))} ms`)
  out(`  Console        http://localhost:${String(server.port)}   (API: ${config.CONSOLE_API_URL})`)
  out('  Stop           Ctrl-C')
  out('')
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    log.info({ signal }, 'shutting down')
    void server.close().then(() => process.exit(0))
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
}

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

/** Finds the database: configured, or the local cluster a running `npm start` recorded. */
function resolveDatabaseUrl(config: ReturnType<typeof loadConfig>): string {
  const configured = databaseUrlOf(config)
  if (configured !== undefined) return configured
  const runtime = join(config.DATA_DIR, 'runtime.json')
  if (existsSync(runtime)) {
    const url = (JSON.parse(readFileSync(runtime, 'utf8')) as { databaseUrl?: string }).databaseUrl
    if (url !== undefined) return url
  }
  throw new Error('no database: start the platform first (npm start) or set DATABASE_URL')
}

async function token(): Promise<void> {
  const config = loadConfig()
  const email = (flag('email') ?? config.SUPERADMIN_EMAIL).toLowerCase()
  const minutes = Number(flag('minutes') ?? config.ACCESS_TOKEN_EXPIRE_MINUTES)
  const db = await createDb(resolveDatabaseUrl(config), { maximumPoolSize: 1 })
  try {
    const id = await db.maybeOneFirst(sql.unsafe`select id from users where lower(email) = ${email}`)
    if (id === null) throw new Error(`no user ${email}`)
    out(await issueAccessToken(config.SECRET_KEY, { sub: String(id), email }, minutes))
  } finally {
    await db.end()
  }
}

async function migrateOnly(): Promise<void> {
  const config = loadConfig()
  const applied = await migrate(resolveDatabaseUrl(config), createLogger({ level: logLevelOf(config) }))
  out(applied.length === 0 ? 'nothing to migrate' : `applied ${applied.join(', ')}`)
}

/** `reencrypt-secrets`: rewrites every secret field made with ENCRYPTION_KEY_PREVIOUS under ENCRYPTION_KEY. */
async function reencrypt(): Promise<void> {
  const config = loadConfig()
  const db = await createDb(resolveDatabaseUrl(config), { maximumPoolSize: 1 })
  try {
    const r = await reencryptSecrets(
      db,
      createSecretBox(config.ENCRYPTION_KEY, previousKeys(config.ENCRYPTION_KEY_PREVIOUS)),
    )
    out(
      `rows with secrets: ${String(r.rows)}, fields: ${String(r.fields)}, re-encrypted: ${String(r.reencrypted)}, skipped (changed meanwhile, run again): ${String(r.skipped)}`,
    )
  } finally {
    await db.end()
  }
}

/** Prints a generated table, or with `--write` puts it into its docs page (docs/configuration.md, docs/errors.md). */
function docTable(name: keyof typeof DOC_TABLE_FILES, table: string): void {
  if (!process.argv.includes('--write')) {
    out(table)
    return
  }
  const file = join(import.meta.dirname, '..', DOC_TABLE_FILES[name])
  writeFileSync(file, replaceBetweenMarkers(readFileSync(file, 'utf8'), name, table))
  out(`${name} written to ${DOC_TABLE_FILES[name]}`)
}

const commands: Record<string, () => Promise<void>> = {
  start,
  'reencrypt-secrets': reencrypt,
  token,
  migrate: migrateOnly,
  'config-table': async () => docTable('config-table', configTable()),
  'error-table': async () => {
    // the features' own codes too, as a started platform has them
    registerFeatureErrorCodes(FEATURES)
    await docTable('error-table', errorTable())
  },
  // the console's static files, ahead of a start (the image builds them when it is built: its
  // root filesystem is read-only at run time). --out: where (else the configured directory)
  'console-build': async () => {
    const outDir = flag('out')
    const dir = outDir !== undefined ? resolve(outDir) : consoleBuildDir(loadConfig())
    const build = await ensureConsoleBuild(dir)
    out(`console ${build.built ? 'built' : 'already built (its stamp matches the sources)'} in ${dir}`)
  },
  // the console's API types from the OpenAPI documents (console/src/api/types.generated.ts)
  'console-api': async () => {
    const text = consoleApiTypes(featureRoutes(FEATURES), featureKinds(FEATURES))
    if (!process.argv.includes('--write')) return void process.stdout.write(text)
    writeFileSync(join(import.meta.dirname, '..', API_TYPES_FILE), text)
    out(`console API types written to ${API_TYPES_FILE}`)
  },
}

const name = process.argv[2] ?? 'start'
const command = commands[name]
if (command === undefined) {
  process.stderr.write(`unknown command ${name}; known: ${Object.keys(commands).join(', ')}\n`)
  process.exit(2)
}
command().catch((err: unknown) => {
  const e = err as Error & { issues?: { path: string; message: string }[] }
  process.stderr.write(
    `error: ${e.message}${e.issues === undefined ? '' : '\n' + e.issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}\n`,
  )
  process.exit(1)
})
