import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { replaceBetweenMarkers, tableBetweenMarkers } from '../kernel/doc-table.ts'
import { parseArgs, UsageError, type ParsedArgs } from './args.ts'
import { actorsDrain, actorsHosts, actorsPartitions, actorsUndrain } from './cmd-actors.ts'
import { ApiError } from './client.ts'
import { configApply, configDiff, configExport, configValidate, issueText } from './cmd-config.ts'
import { chat } from './cmd-chat.ts'
import { eventsTail } from './cmd-events.ts'
import { natsConfig } from './cmd-nats-config.ts'
import { install } from './cmd-install.ts'
import { login, logout, whoami } from './cmd-login.ts'
import {
  packageCreate,
  packageExport,
  packageInstall,
  packageList,
  packagePreview,
  packageUninstall,
} from './cmd-package.ts'
import { run } from './cmd-run.ts'
import { CLI_REFERENCE_FILE, CLI_REFERENCE_MARKER, cliReference, commandHelp, groupHelp, overallHelp } from './help.ts'
import { processIo, type Io } from './io.ts'

/*
 * `platform …`: reads the command line against the table (commands.ts), runs the command and
 * answers its exit code. Results go to stdout, messages and errors to stderr.
 */

type Handler = (a: ParsedArgs, io: Io) => Promise<number>

const HANDLERS: Record<string, Handler> = {
  login,
  logout,
  whoami,
  'config validate': configValidate,
  'config diff': configDiff,
  'config apply': configApply,
  'config export': configExport,
  'package preview': packagePreview,
  'package install': packageInstall,
  'package uninstall': packageUninstall,
  'package list': packageList,
  'package export': packageExport,
  'package create': packageCreate,
  run,
  chat,
  'events tail': eventsTail,
  'actors hosts': actorsHosts,
  'actors partitions': actorsPartitions,
  'actors drain': actorsDrain,
  'actors undrain': actorsUndrain,
  'nats-config': natsConfig,
  install,
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
  const handler = HANDLERS[a.command.name]
  if (handler === undefined) throw new Error(`no handler for ${a.command.name}`)
  try {
    return await handler(a, io)
  } catch (err) {
    if (err instanceof ApiError) {
      io.err(`platform ${a.command.name}: ${err.message}${err.code === undefined ? '' : ` (${err.code})`}\n`)
      for (const e of err.errors) io.err(`  ${issueText(e)}\n`)
      if (err.status === 401) io.err('  (log in again: platform login)\n')
    } else io.err(`platform ${a.command.name}: ${(err as Error).message}\n`)
    return 1
  }
}
