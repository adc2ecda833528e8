import { Composer, LineCounter, Parser, isAlias, isMap, isScalar, isSeq, type CST, type Document } from 'yaml'
import { AppError, type FieldIssue } from '../kernel/errors.ts'
import type { DocumentLimits } from './document-limits.ts'
import { formatPath, parsePath, type PathSegment } from './document-path.ts'

export interface SourcePosition {
  /** 1-based, as editors count. */
  line: number
  column: number
}

/** An issue of a document: where it is as a path and, when the text has it, as line and column. */
export interface DocumentIssue extends FieldIssue {
  line?: number
  column?: number
}

export interface ParsedDocument {
  /** The plain JS value (objects, arrays, scalars). */
  value: unknown
  /** Where a path is in the text: the key of a map entry, the start of a list item; undefined when absent. */
  positionOf(path: string | readonly PathSegment[]): SourcePosition | undefined
  /** An issue at a path, with its line and column in the message and as fields. */
  issueAt(path: string | readonly PathSegment[], message: string): DocumentIssue
}

/**
 * YAML text -> a document with a source map, within limits that answer a clear error instead of
 * exhausting the process: the size is checked before parsing, the nesting depth on the parser's
 * token tree (built with an explicit stack, so 10,000-deep nesting cannot overflow the call stack)
 * before anything recursive runs, aliases are counted while converting, duplicate keys and more
 * than one document are refused.
 */
export function parseYamlDocument(text: string, limits: DocumentLimits): ParsedDocument {
  // a string's length never exceeds its UTF-8 size: the cheap test first, then the exact one
  if (text.length > limits.maxBytes || Buffer.byteLength(text, 'utf8') > limits.maxBytes)
    throw AppError.of(
      'config.too_large',
      `the document is larger than ${String(limits.maxBytes)} bytes (CONFIG_MAX_BYTES)`,
    )
  return parseJsonFast(text, limits) ?? parseYaml(text, limits)
}

/** The YAML path: every problem with its line and column (the size was checked by the caller). */
function parseYaml(text: string, limits: DocumentLimits): ParsedDocument {
  const lines = new LineCounter()
  const at = (offset: number): SourcePosition => {
    const p = lines.linePos(offset)
    return { line: p.line, column: p.col }
  }
  // parseDocument's own steps (Parser, then Composer), split so that the depth is checked between them
  const tokens = [...new Parser(lines.addNewLine).parse(text)]
  const deep = firstTooDeep(tokens, limits.maxDepth)
  if (deep !== undefined) {
    const p = at(deep)
    throw AppError.of(
      'config.too_deep',
      `the document nests more than ${String(limits.maxDepth)} levels (line ${String(p.line)}, column ${String(p.column)})`,
      { issues: [{ path: '', message: `nested more than ${String(limits.maxDepth)} levels`, ...p }] },
    )
  }
  // resolveKnownTags: false — `!!binary`, `!!set`, `!!timestamp` would put Buffers, Sets and Dates
  // where the API takes JSON; logLevel: the process's log is not the place for a user's YAML warnings
  const composer = new Composer({ uniqueKeys: true, resolveKnownTags: false, logLevel: 'error' })
  const docs = [...composer.compose(tokens, true, text.length)]
  const doc = docs[0]
  if (doc === undefined) return document(null, undefined, at)
  const tags = doc.warnings.filter((w) => w.code === 'TAG_RESOLVE_FAILED')
  const problems: DocumentIssue[] = [...doc.errors, ...tags].map((e) => {
    const p = at(e.pos[0])
    const what =
      e.code === 'DUPLICATE_KEY'
        ? 'duplicate key: map keys must be unique'
        : e.code === 'TAG_RESOLVE_FAILED'
          ? `${e.message}: a document holds plain values (text, numbers, booleans, null, lists, maps)`
          : e.message
    return { path: '', message: `${what} (line ${String(p.line)}, column ${String(p.column)})`, ...p }
  })
  const second = docs[1]
  if (second !== undefined) {
    const p = at(second.range[0])
    problems.push({
      path: '',
      message: `one document per text: a second one starts at line ${String(p.line)}, column ${String(p.column)}`,
      ...p,
    })
  }
  const first = problems[0]
  if (first !== undefined) throw AppError.of('config.invalid_yaml', first.message, { issues: problems })
  let value: unknown
  try {
    value = doc.toJS({ maxAliasCount: limits.maxAliasCount })
  } catch (err) {
    // yaml throws a ReferenceError naming the resource exhaustion attack; anything else is a bad alias
    const excessive = err instanceof ReferenceError && /alias count/i.test(err.message)
    throw excessive
      ? AppError.of('config.too_many_aliases', `the document expands more than ${String(limits.maxAliasCount)} aliases`)
      : AppError.of('config.invalid_yaml', `the document cannot be read: ${(err as Error).message}`)
  }
  // aliases nest what they name where they stand: the value may be deeper than the text
  if (valueTooDeep(value, limits.maxDepth))
    throw AppError.of(
      'config.too_deep',
      `the document nests more than ${String(limits.maxDepth)} levels once its aliases are expanded (or an alias is inside its own anchor)`,
    )
  return document(value, doc, at)
}

/*
 * JSON is YAML, and what a CI job renders is often JSON: the yaml library reads it at about a
 * microsecond a byte (90 ms for a 1,000-resource document, most of a no-op apply), JSON.parse in
 * well under one. A text JSON.parse accepts, without a duplicate key, a `__proto__` key or more
 * nesting than allowed, has the same value either way; its source map (only needed to place an
 * issue) is built by the YAML path on first use. Anything else takes the YAML path, which reports
 * each problem with its line and column.
 */
function parseJsonFast(text: string, limits: DocumentLimits): ParsedDocument | undefined {
  const start = text.trimStart()[0]
  if (start !== '{' && start !== '[') return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (text.includes('"__proto__"') || jsonHasDuplicateKey(text) || valueTooDeep(value, limits.maxDepth))
    return undefined
  let mapped: ParsedDocument | undefined
  const located = (): ParsedDocument => (mapped ??= parseYaml(text, limits))
  return {
    value,
    positionOf: (path) => located().positionOf(path),
    issueAt: (path, message) => located().issueAt(path, message),
  }
}

/** Whether a text JSON.parse accepted repeats a key in one object (JSON.parse keeps the last silently). */
function jsonHasDuplicateKey(text: string): boolean {
  const stack: { keys: Set<string> | null; expectKey: boolean }[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      let j = i + 1
      let escaped = false
      for (; j < text.length; j++) {
        const d = text.charCodeAt(j)
        if (d === 0x5c) {
          j++
          escaped = true
        } else if (d === 0x22) break
      }
      const top = stack[stack.length - 1]
      if (top !== undefined && top.keys !== null && top.expectKey) {
        const key = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j)
        if (top.keys.has(key)) return true
        top.keys.add(key)
        top.expectKey = false
      }
      i = j
    } else if (c === 0x7b) stack.push({ keys: new Set(), expectKey: true })
    else if (c === 0x5b) stack.push({ keys: null, expectKey: false })
    else if (c === 0x7d || c === 0x5d) stack.pop()
    else if (c === 0x2c) {
      const top = stack[stack.length - 1]
      if (top !== undefined && top.keys !== null) top.expectKey = true
    }
  }
  return false
}

/** Whether a converted value nests deeper than `max`, without recursion (an alias bomb was refused before: the walk is bounded). */
function valueTooDeep(value: unknown, max: number): boolean {
  const stack: { v: unknown; depth: number }[] = [{ v: value, depth: 0 }]
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { v, depth } = top
    if (v === null || typeof v !== 'object') continue
    if (depth + 1 > max) return true
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push({ v: child, depth: depth + 1 })
  }
  return false
}

/** The offset of the first collection nested deeper than `max`, walking the token tree without recursion. */
function firstTooDeep(tokens: CST.Token[], max: number): number | undefined {
  const stack: { token: CST.Token; depth: number }[] = tokens.map((token) => ({ token, depth: 0 }))
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { token, depth } = top
    if (token.type === 'document') {
      if (token.value !== undefined) stack.push({ token: token.value, depth })
    } else if ('items' in token) {
      if (depth + 1 > max) return token.offset
      for (const item of token.items as { key?: CST.Token | null; value?: CST.Token }[]) {
        if (item.key !== undefined && item.key !== null) stack.push({ token: item.key, depth: depth + 1 })
        if (item.value !== undefined) stack.push({ token: item.value, depth: depth + 1 })
      }
    }
  }
  return undefined
}

function document(value: unknown, doc: Document | undefined, at: (offset: number) => SourcePosition): ParsedDocument {
  const positionOf = (path: string | readonly PathSegment[]): SourcePosition | undefined => {
    if (doc === undefined) return undefined
    const segments = typeof path === 'string' ? parsePath(path) : path
    let node: unknown = doc.contents
    let offset = doc.contents?.range?.[0]
    for (const s of segments) {
      if (isAlias(node)) node = node.resolve(doc)
      if (isMap(node)) {
        const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : p.key) === String(s))
        if (pair === undefined) return undefined
        offset = isScalar(pair.key) ? pair.key.range?.[0] : undefined
        node = pair.value
      } else if (isSeq(node) && typeof s === 'number') {
        const item: unknown = node.items[s]
        if (item === undefined) return undefined
        node = item
        offset = (item as { range?: [number, number, number] }).range?.[0]
      } else return undefined
    }
    return offset === undefined ? undefined : at(offset)
  }
  return {
    value,
    positionOf,
    issueAt(path, message) {
      const segments = typeof path === 'string' ? parsePath(path) : path
      const shown = formatPath(segments)
      // an absent key (a required field left out) is shown where its nearest present parent is
      let p: SourcePosition | undefined
      for (let n = segments.length; n >= 0 && p === undefined; n--) p = positionOf(segments.slice(0, n))
      if (p === undefined) return { path: shown, message }
      return { path: shown, message: `${message} (line ${String(p.line)}, column ${String(p.column)})`, ...p }
    },
  }
}
