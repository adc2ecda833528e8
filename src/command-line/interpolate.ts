import { isScalar, parseDocument, visit } from 'yaml'

/*
 * `${VAR}` in a config's string values, from this shell's environment, before the file is sent:
 * the environment a CI job keeps its secrets in is the client's. The server runs the same
 * replacement with its own environment afterwards, so the rule is the server's: values only
 * (never keys), `$${VAR}` is the literal `${VAR}` (kept escaped here for the server), and a
 * variable not set here is left as it is for the server to fill or name as missing. A replaced
 * value is escaped in turn, so text inside a secret that looks like `${X}` stays text.
 */
const PLACEHOLDER = /\$\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

// a function, not a replacement string: there `$$` would mean one `$`
const escapeValue = (v: string): string => v.replace(/\$\{/g, () => '$${')

function replaceIn(text: string, env: Readonly<Record<string, string | undefined>>): string {
  return text.replace(PLACEHOLDER, (whole, name: string | undefined) => {
    if (name === undefined) return whole
    const found = env[name]
    return found === undefined ? whole : escapeValue(found)
  })
}

/** The YAML text with the placeholders set in `env` replaced; the text unchanged when there are none. */
export function interpolateClientEnv(text: string, env: Readonly<Record<string, string | undefined>>): string {
  if (!text.includes('${')) return text
  const doc = parseDocument(text, { keepSourceTokens: false })
  // a text the parser refuses goes as it is: the server names its errors with lines and columns
  if (doc.errors.length > 0) return text
  let changed = false
  visit(doc, {
    Scalar(key, node) {
      if (key === 'key' || !isScalar(node) || typeof node.value !== 'string' || !node.value.includes('${')) return
      const next = replaceIn(node.value, env)
      if (next !== node.value) {
        node.value = next
        changed = true
      }
    },
  })
  return changed ? doc.toString({ lineWidth: 0 }) : text
}
