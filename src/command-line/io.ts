import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'

/*
 * The terminal side: what a command prints (stdout for results, stderr for messages), whether to
 * colour (a TTY and no `NO_COLOR`), reading a file argument or stdin (`-`), and asking for a value.
 */

export interface Io {
  out(text: string): void
  err(text: string): void
  /** Colours on: stdout is a terminal and `NO_COLOR` is unset or empty. */
  readonly color: boolean
}

export function processIo(env: NodeJS.ProcessEnv = process.env): Io {
  const noColor = env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== ''
  return {
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
    color: process.stdout.isTTY && !noColor,
  }
}

export const paint = (io: Io, code: string, text: string): string => (io.color ? `\x1b[${code}m${text}\x1b[0m` : text)

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** A file argument's text; `-` reads stdin to its end. */
export async function readSource(arg: string): Promise<string> {
  return arg === '-' ? readStdin() : readFileSync(arg, 'utf8')
}

/** `JSON` text or `@file` holding it. */
export function readJsonArg(arg: string, what: string): unknown {
  const text = arg.startsWith('@') ? readFileSync(arg.slice(1), 'utf8') : arg
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    throw new Error(`${what} is not JSON: ${(err as Error).message}`, { cause: err })
  }
}

/** Lines read from stdin one at a time (a prompt on a terminal; a piped answer otherwise). */
export interface LineReader {
  ask(prompt: string): Promise<string | null>
  /** Ctrl-C: on a terminal readline catches it; piped, the process signal. */
  onInterrupt(handler: () => void): void
  close(): void
}

export function lineReader(): LineReader {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY })
  const queued: string[] = []
  const waiting: ((line: string | null) => void)[] = []
  let closed = false
  rl.on('line', (line) => {
    const w = waiting.shift()
    if (w !== undefined) w(line)
    else queued.push(line)
  })
  rl.on('close', () => {
    closed = true
    for (const w of waiting.splice(0)) w(null)
  })
  return {
    ask(prompt) {
      if (process.stdin.isTTY) process.stderr.write(prompt)
      const q = queued.shift()
      if (q !== undefined) return Promise.resolve(q)
      if (closed) return Promise.resolve(null)
      return new Promise((resolve) => waiting.push(resolve))
    },
    onInterrupt(handler) {
      rl.on('SIGINT', handler)
      process.on('SIGINT', handler)
    },
    close: () => rl.close(),
  }
}

/** A secret typed on a terminal without echo; piped, one line of stdin. */
export async function askSecret(prompt: string): Promise<string | null> {
  if (!process.stdin.isTTY) {
    const r = lineReader()
    try {
      return await r.ask(prompt)
    } finally {
      r.close()
    }
  }
  process.stderr.write(prompt)
  process.stdin.setRawMode(true)
  process.stdin.resume()
  return new Promise((resolve) => {
    let text = ''
    const onData = (buf: Buffer) => {
      for (const ch of buf.toString('utf8')) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004' || ch === '\u0003') {
          process.stdin.setRawMode(false)
          process.stdin.pause()
          process.stdin.off('data', onData)
          process.stderr.write('\n')
          resolve(ch === '\u0003' ? null : text)
          return
        }
        if (ch === '\u007f') text = text.slice(0, -1)
        else text += ch
      }
    }
    process.stdin.on('data', onData)
  })
}
