import { readFileSync, writeFileSync } from 'node:fs'

/*
 * The table of the last full `npm run bench` in bench/README.md, between two markers: written by
 * the run itself, so what the README shows is one run's rows, not numbers copied by hand. The
 * text around the markers (the analysis of each stop) is left as it is.
 */
export const TABLE_START = '<!-- bench-table:start (written by `npm run bench`; do not edit by hand) -->'
export const TABLE_END = '<!-- bench-table:end -->'

/** `readme` with the text between the markers replaced by `lines`; the markers must be there once each, in order. */
export function withTable(readme: string, lines: readonly string[]): string {
  const start = readme.indexOf(TABLE_START)
  const end = readme.indexOf(TABLE_END)
  if (
    start < 0 ||
    end < start ||
    readme.indexOf(TABLE_START, start + 1) >= 0 ||
    readme.indexOf(TABLE_END, end + 1) >= 0
  ) {
    throw new Error(`bench/README.md needs the markers ${TABLE_START} and ${TABLE_END}, once each, in order`)
  }
  return `${readme.slice(0, start + TABLE_START.length)}\n${lines.join('\n')}\n${readme.slice(end)}`
}

/** Writes `lines` between the markers of the README at `path`. */
export function writeTable(path: string, lines: readonly string[]): void {
  writeFileSync(path, withTable(readFileSync(path, 'utf8'), lines))
}
