import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { replaceBetweenMarkers, tableBetweenMarkers } from '../kernel/doc-table.ts'
import { parseArgs, UsageError, type ParsedArgs } from './args.ts'
import { ApiError } from './client.ts'
import { CLI_REFERENCE_FILE, CLI_REFERENCE_MARKER, cliReference, commandHelp, groupHelp, overallHelp } from './help.ts'
import { processIo, type Io } from './io.ts'

/*
 * `platform …`: reads the command line against the table (commands.ts), runs the command and
 * answers its exit code. Results go to stdout, messages and errors to stderr.
 */

type Handler = (a: ParsedArgs, io: Io) => Promise<number>

/*
 * Each command's module is loaded when that command runs: `--help`, a usage error or `login` then
 * load none of the NATS client, YAML and schema code the others need (the whole set cost 2-4 s of
 * CPU a process on a 2-core machine, once per command line).
 */
const HANDLERS: Record<string, () => Promise<Handler>> = {
  login: async () => (await import('./cmd-login.ts')).login,
  logout: async () => (await import('./cmd-login.ts')).logout,
  whoami: async () => (await import('./cmd-login.ts')).whoami,
  'config validate': async () => (await import('./cmd-config.ts')).configValidate,
  'config diff': async () => (await import('./cmd-config.ts')).configDiff,
  'config apply': async () => (await import('./cmd-config.ts')).configApply,
  'config export': async () => (await import('./cmd-config.ts')).configExport,
  'package preview': async () => (await import('./cmd-package.ts')).packagePreview,
  'package install': async () => (await import('./cmd-package.ts')).packageInstall,
  'package uninstall': async () => (await import('./cmd-package.ts')).packageUninstall,
  'package list': async () => (await import('./cmd-package.ts')).packageList,
  'package export': async () => (await import('./cmd-package.ts')).packageExport,
  'package create': async () => (await import('./cmd-package.ts')).packageCreate,
  run: async () => (await import('./cmd-run.ts')).run,
  chat: async () => (await import('./cmd-chat.ts')).chat,
  'events tail': async () => (await import('./cmd-events.ts')).eventsTail,
  'actors hosts': async () => (await import('./cmd-actors.ts')).actorsHosts,
  'actors partitions': async () => (await import('./cmd-actors.ts')).actorsPartitions,
  'actors drain': async () => (await import('./cmd-actors.ts')).actorsDrain,
  'actors undrain': async () => (await import('./cmd-actors.ts')).actorsUndrain,
  'nats-config': async () => (await import('./cmd-nats-config.ts')).natsConfig,
  install: async () => (await import('./cmd-install.ts')).install,
}

const ROOT = join(import.meta.dirname, '..', '..')

/** `platform cli-reference [--write]`: prints docs/cli.md's generated part, or writes it there. */
function reference(argv: readonly string[], io: Io): number {
  const path = join(ROOT, CLI_REFERENCE_FILE)
  if (!argv.includes('--write')) {
    io.out(`${cliReference()}\n`)
    return 0
  }
  const text = readFileSync(path, 'utf8')
  if (tableBetweenMarkers(text, CLI_REFERENCE_MARKER) === cliReference()) return 0
  writeFileSync(path, replaceBetweenMarkers(text, CLI_REFERENCE_MARKER, cliReference()))
  io.err(`wrote ${CLI_REFERENCE_FILE}\n`)
  return 0
}

export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || (argv[0] === 'help' && argv.length === 1)) {
    io.out(overallHelp())
    return argv.length === 0 ? 1 : 0
  }
  if (argv[0] === 'cli-reference') return reference(argv, io)
  const group = groupHelp(argv[0] as string)
  if (group !== null && (argv[1] === '--help' || argv[1] === '-h' || argv[1] === undefined)) {
    ;(argv[1] === undefined ? io.err : io.out)(group)
    return argv[1] === undefined ? 1 : 0
  }
  let a: ParsedArgs
  try {
    a = parseArgs(argv[0] === 'help' ? [...argv.slice(1), '--help'] : argv)
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    io.err(`platform: ${err.message}\n`)
    io.err(err.command === undefined ? '\nplatform --help lists the commands.\n' : `\n${commandHelp(err.command)}`)
    return 1
  }
  if (a.options['help'] === true) {
    io.out(commandHelp(a.command))
    return 0
  }
  const load = HANDLERS[a.command.name]
  if (load === undefined) throw new Error(`no handler for ${a.command.name}`)
  const handler = await load()
  try {
    return await handler(a, io)
  } catch (err) {
    if (err instanceof ApiError) {
      io.err(`platform ${a.command.name}: ${err.message}${err.code === undefined ? '' : ` (${err.code})`}\n`)
      if (err.errors.length > 0) {
        const { issueText } = await import('./cmd-config.ts')
        for (const e of err.errors) io.err(`  ${issueText(e)}\n`)
      }
      if (err.status === 401) io.err('  (log in again: platform login)\n')
    } else io.err(`platform ${a.command.name}: ${(err as Error).message}\n`)
    return 1
  }
}
