import { classHighlighter, highlightCode } from '@lezer/highlight'
import type { Parser } from '@lezer/common'

/*
 * Code blocks of a rendered answer highlighted with the editor's own grammars (lezer), loaded on
 * first use: this module and the grammars are a separate chunk (`import('./highlight.ts')`), so a
 * chat without code never downloads them. The output is text nodes in spans with `tok-*` classes
 * (classHighlighter): nothing of the code is ever parsed as HTML.
 */
const GRAMMARS: Record<string, () => Promise<Parser>> = {
  python: async () => (await import('@codemirror/lang-python')).pythonLanguage.parser,
  json: async () => (await import('@codemirror/lang-json')).jsonLanguage.parser,
  sql: async () => (await import('@codemirror/lang-sql')).PostgreSQL.language.parser,
}
const ALIASES: Record<string, string> = { py: 'python', python3: 'python', postgres: 'sql', postgresql: 'sql' }

export function grammarName(className: string): string | null {
  const m = /(?:^|\s)language-([\w+-]+)/.exec(className)
  if (m === null) return null
  const name = (m[1] as string).toLowerCase()
  const canonical = ALIASES[name] ?? name
  return canonical in GRAMMARS ? canonical : null
}

/** Replaces the text of each `<code class="language-x">` under root with highlighted spans. */
export async function highlightBlocks(root: HTMLElement): Promise<void> {
  for (const code of Array.from(root.querySelectorAll<HTMLElement>('pre > code[class*="language-"]'))) {
    if (code.dataset['highlighted'] === '1') continue
    const name = grammarName(code.className)
    if (name === null) continue
    const parser = await (GRAMMARS[name] as () => Promise<Parser>)()
    const text = code.textContent ?? ''
    const out = document.createDocumentFragment()
    highlightCode(
      text,
      parser.parse(text),
      classHighlighter,
      (piece, classes) => {
        if (classes === '') out.append(piece)
        else {
          const span = document.createElement('span')
          span.className = classes
          span.textContent = piece
          out.append(span)
        }
      },
      () => out.append('\n'),
    )
    code.replaceChildren(out)
    code.dataset['highlighted'] = '1'
  }
}
