import { HighlightStyle, syntaxHighlighting } from '@codemirror/language'
import { EditorState } from '@codemirror/state'
import { EditorView } from '@codemirror/view'
import { tags } from '@lezer/highlight'
import { basicSetup } from 'codemirror'

/*
 * The code editor: CodeMirror 6 with a language's highlighting. Only reached through
 * `import('./editor.ts')` (CodeEditor.tsx), so CodeMirror is a chunk of its own that the console's
 * first load never pays for.
 *
 * The editor lives in a shadow root: CodeMirror adds its styles as a <style> element to a document
 * (which the console's CSP, `style-src 'self'`, refuses) but as adopted style sheets to a shadow
 * root (which a CSP does not govern). The console's colours reach it as inherited CSS variables.
 */
export type Language = 'python' | 'json' | 'sql'

async function languageOf(lang: Language) {
  switch (lang) {
    case 'python':
      return (await import('@codemirror/lang-python')).python()
    case 'json':
      return (await import('@codemirror/lang-json')).json()
    case 'sql':
      return (await import('@codemirror/lang-sql')).sql()
  }
}

export interface Editor {
  view: EditorView
  setValue(text: string): void
  destroy(): void
}

/** Colours from the console's palette (light and dark), so the editor follows the theme. */
const theme = EditorView.theme({
  '&': { color: 'var(--fg)', backgroundColor: 'var(--bg)', fontSize: '14px' },
  '.cm-content': { caretColor: 'var(--fg)', fontFamily: "ui-monospace, 'SFMono-Regular', Menlo, monospace" },
  '.cm-gutters': { backgroundColor: 'var(--bg-soft)', color: 'var(--muted)', borderRight: '1px solid var(--border)' },
  '.cm-activeLine, .cm-activeLineGutter': { backgroundColor: 'color-mix(in srgb, var(--bg-soft) 60%, transparent)' },
  '&.cm-focused': { outline: '3px solid var(--focus)' },
  '.cm-scroller': { maxHeight: '480px', overflow: 'auto' },
})
const highlight = HighlightStyle.define([
  { tag: [tags.keyword, tags.operatorKeyword, tags.modifier, tags.controlKeyword], color: 'var(--tok-keyword)' },
  { tag: [tags.string, tags.special(tags.string)], color: 'var(--tok-string)' },
  { tag: [tags.number, tags.bool, tags.null, tags.atom], color: 'var(--tok-number)' },
  { tag: tags.comment, color: 'var(--tok-comment)', fontStyle: 'italic' },
  {
    tag: [
      tags.definition(tags.variableName),
      tags.function(tags.definition(tags.variableName)),
      tags.propertyName,
      tags.className,
    ],
    color: 'var(--tok-name)',
  },
])

export async function createEditor(
  host: HTMLElement,
  opts: { value: string; language: Language; label: string; readOnly?: boolean; onChange: (text: string) => void },
): Promise<Editor> {
  const shadow = host.shadowRoot ?? host.attachShadow({ mode: 'open' })
  const parent = document.createElement('div')
  shadow.replaceChildren(parent)
  const view = new EditorView({
    root: shadow,
    parent,
    state: EditorState.create({
      doc: opts.value,
      extensions: [
        basicSetup,
        theme,
        syntaxHighlighting(highlight),
        await languageOf(opts.language),
        EditorState.readOnly.of(opts.readOnly === true),
        EditorView.contentAttributes.of({ 'aria-label': opts.label }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) opts.onChange(u.state.doc.toString())
        }),
      ],
    }),
  })
  return {
    view,
    setValue(text) {
      if (text !== view.state.doc.toString())
        view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } })
    },
    destroy: () => view.destroy(),
  }
}
