import { COMMANDS, GLOBAL_OPTIONS, type CommandSpec, type OptionSpec } from './commands.ts'

/*
 * The help texts and the reference page, both from the table in commands.ts. The reference sits
 * between the `cli-reference` markers of docs/cli.md (`platform cli-reference --write`), and a
 * test compares it with `cliReference()`.
 */

/** Where the generated reference lives, relative to the repository root. */
export const CLI_REFERENCE_FILE = 'docs/cli.md'
export const CLI_REFERENCE_MARKER = 'cli-reference'

const usage = (c: CommandSpec): string =>
  `platform ${c.name}${c.args === '' ? '' : ` ${c.args}`}${c.options.length > 0 ? ' [options]' : ''}`

const optionHead = (o: OptionSpec): string => `--${o.name}${o.value === undefined ? '' : ` ${o.value}`}`

/** Backticks are for the Markdown page; on a terminal they are noise. */
const plain = (s: string): string => s.replaceAll('`', '')

function optionLines(options: readonly OptionSpec[]): string[] {
  const width = Math.max(...options.map((o) => optionHead(o).length))
  return options.map((o) => `  ${optionHead(o).padEnd(width)}  ${plain(o.about)}`)
}

/** `platform <command> --help`. */
export function commandHelp(c: CommandSpec): string {
  const lines = [`Usage: ${usage(c)}`, '', c.summary, '']
  lines.push('Options:', ...optionLines([...c.options, ...GLOBAL_OPTIONS]))
  for (const d of c.details ?? []) lines.push('', plain(d))
  return `${lines.join('\n')}\n`
}

/** `platform --help`: every command, one line each. */
export function overallHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length))
  const lines = [
    'Usage: platform <command> [arguments] [options]',
    '',
    'The agent platform from a terminal or a CI job, over its HTTP API.',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Every command takes --url URL and --help; `platform <command> --help` says more.',
  ]
  return `${plain(lines.join('\n'))}\n`
}

/** `platform config --help`: the commands of one group. */
export function groupHelp(group: string): string | null {
  const members = COMMANDS.filter((c) => c.name.startsWith(`${group} `))
  if (members.length === 0) return null
  const width = Math.max(...members.map((c) => c.name.length))
  const lines = [
    `Usage: platform ${group} <${members.map((c) => c.name.split(' ')[1]).join('|')}> [arguments] [options]`,
    '',
    'Commands:',
    ...members.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `platform ${group} <command> --help says more.`,
  ]
  return `${lines.join('\n')}\n`
}

const cell = (s: string): string => s.replaceAll('|', '\\|')

/** The Markdown reference of every command (docs/cli.md between the markers). */
export function cliReference(): string {
  const out: string[] = []
  for (const c of COMMANDS) {
    out.push(`### \`platform ${c.name}\``, '', c.summary + '.', '', '```', usage(c), '```', '')
    const options = [...c.options, ...GLOBAL_OPTIONS.filter((o) => o.name !== 'help')]
    out.push('| Option | What |', '|---|---|')
    for (const o of options)
      out.push(`| \`${cell(optionHead(o))}\`${o.repeat === true ? ' (repeatable)' : ''} | ${cell(o.about)} |`)
    out.push('')
    for (const d of c.details ?? []) out.push(d, '')
  }
  return out.join('\n').trimEnd()
}
