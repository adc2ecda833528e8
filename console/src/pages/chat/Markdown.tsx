import DOMPurify from 'dompurify'
import { Marked } from 'marked'
import { memo, useEffect, useMemo, useRef } from 'react'

/*
 * An answer's markdown as HTML: marked renders, DOMPurify sanitizes (the model's text is untrusted:
 * no script, no event handler, no javascript: link reaches the DOM), links open in a new tab
 * without an opener. Code blocks are highlighted once the text stops changing, by a module loaded
 * on first use.
 */
const marked = new Marked({ gfm: true, breaks: true, async: false })

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank')
    node.setAttribute('rel', 'noopener noreferrer')
  }
})

export function renderMarkdown(text: string): string {
  const html = marked.parse(text) as string
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'textarea', 'button'],
  })
}

/*
 * Rendered answers by their text, so a row scrolled out of the virtual list and back is not parsed
 * again (a Map keeps insertion order: the oldest entry is dropped first). A streaming answer is not
 * kept: its text changes every frame.
 */
const rendered = new Map<string, string>()
const KEEP = 2000

function renderCached(text: string): string {
  const hit = rendered.get(text)
  if (hit !== undefined) return hit
  const html = renderMarkdown(text)
  rendered.set(text, html)
  if (rendered.size > KEEP) rendered.delete(rendered.keys().next().value as string)
  return html
}

export const Markdown = memo(function Markdown({ text, live = false }: { text: string; live?: boolean }) {
  const ref = useRef<HTMLDivElement>(null)
  const html = useMemo(() => (live ? renderMarkdown(text) : renderCached(text)), [text, live])
  useEffect(() => {
    const el = ref.current
    if (live || el === null || el.querySelector('pre > code[class*="language-"]') === null) return
    let current = true
    void import('./highlight.ts').then((m) => (current ? m.highlightBlocks(el) : undefined))
    return () => {
      current = false
    }
  }, [html, live])
  // sanitized above: DOMPurify's output is the only HTML that reaches the page
  return <div ref={ref} className="markdown" dangerouslySetInnerHTML={{ __html: html }} />
})
