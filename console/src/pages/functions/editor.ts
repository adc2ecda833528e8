import { basicSetup } from 'codemirror'
import { EditorState } from '@codemirror/state'
import { EditorView } from '@codemirror/view'

/*
 * The code editor: CodeMirror 6 with a language's highlighting. Only reached through
 * `import('./editor.ts')` (CodeEditor.tsx), so CodeMirror is a chunk of its own that the console's
 * first load never pays for.
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

export async function createEditor(
  parent: HTMLElement,
  opts: { value: string; language: Language; label: string; readOnly?: boolean; onChange: (text: string) => void },
): Promise<Editor> {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: opts.value,
      extensions: [
        basicSetup,
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
      if (text !== view.state.doc.toString()) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } })
    },
    destroy: () => view.destroy(),
  }
}
