import { COMMANDS, GLOBAL_OPTIONS, type CommandSpec } from './commands.ts'

/** A command line read against the table of commands. */
export interface ParsedArgs {
  command: CommandSpec
  positional: string[]
  /** Flags are `true`; repeatable options are arrays; others the last value given. */
  options: Record<string, string | true | string[]>
}

export class UsageError extends Error {
  override name = 'UsageError'
  /** The command the error is about, so its usage can be shown. */
  readonly command: CommandSpec | undefined
  constructor(message: string, command?: CommandSpec) {
    super(message)
    this.command = command
  }
}

/** The command named by the first one or two words of `argv`, and how many words it used. */
export function findCommand(argv: readonly string[]): { command: CommandSpec; words: number } | undefined {
  const two = COMMANDS.find((c) => c.name === `${argv[0] ?? ''} ${argv[1] ?? ''}`)
  if (two !== undefined) return { command: two, words: 2 }
  const one = COMMANDS.find((c) => c.name === argv[0])
  return one === undefined ? undefined : { command: one, words: 1 }
}

/**
 * Reads `argv` (without node and the script): `--name value`, `--name=value`, flags, `--` ends the
 * options, `-` alone is a positional (stdin). Unknown options and wrong argument counts are usage
 * errors naming the command.
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const found = findCommand(argv)
  if (found === undefined) {
    const group = COMMANDS.filter((c) => c.name.startsWith(`${argv[0] ?? ''} `))
    if (group.length > 0)
      throw new UsageError(
        `${argv[0] ?? ''}: say which: ${group.map((c) => c.name.split(' ')[1]).join(', ')}${argv[1] === undefined ? '' : ` (not ${argv[1]})`}`,
      )
    throw new UsageError(argv[0] === undefined ? 'no command given' : `unknown command ${argv[0]}`)
  }
  const { command } = found
  const specs = [...command.options, ...GLOBAL_OPTIONS]
  const positional: string[] = []
  const options: ParsedArgs['options'] = {}
  const rest = argv.slice(found.words)
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string
    if (arg === '--') {
      positional.push(...rest.slice(i + 1))
      break
    }
    if (arg === '-h') {
      options['help'] = true
      continue
    }
    if (!arg.startsWith('--')) {
      positional.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq)
    const spec = specs.find((o) => o.name === name)
    if (spec === undefined) throw new UsageError(`unknown option --${name}`, command)
    if (spec.value === undefined) {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`, command)
      options[name] = true
      continue
    }
    let value: string
    if (eq >= 0) value = arg.slice(eq + 1)
    else {
      const next = rest[i + 1]
      if (next === undefined) throw new UsageError(`--${name} needs a value (${spec.value})`, command)
      value = next
      i++
    }
    if (spec.repeat === true) {
      const list = options[name]
      options[name] = Array.isArray(list) ? [...list, value] : [value]
    } else options[name] = value
  }
  if (options['help'] !== true) {
    const [min, max] = command.positional
    if (positional.length < min) throw new UsageError(`missing argument ${command.args}`, command)
    if (positional.length > max) throw new UsageError(`unexpected argument ${positional[max] ?? ''}`, command)
  }
  return { command, positional, options }
}

/** A string option, or undefined. */
export function optionText(a: ParsedArgs, name: string): string | undefined {
  const v = a.options[name]
  return typeof v === 'string' ? v : undefined
}

/** A repeatable option's values ([] when absent). */
export function optionList(a: ParsedArgs, name: string): string[] {
  const v = a.options[name]
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : []
}

export const optionFlag = (a: ParsedArgs, name: string): boolean => a.options[name] === true
