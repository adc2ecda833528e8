/**
 * The one renderer for user-authored templates (agent system prompts, function/query/connector
 * parameter templates, Template resources). Jinja2 syntax through nunjucks 3.2.4, hardened.
 *
 * Plain nunjucks is not a sandbox: it compiles a template to JavaScript source and runs it with
 * `new Function`, and that code reaches anything through JS member access
 * (`{{ range.constructor("return process")() }}`), through `in`/`is`/filter names looked up on
 * plain objects (`{{ x | constructor }}`), and even through the compiler itself, which pastes
 * some names raw into the generated source (`{% set "x\", globalThis.y = 1, \"" = 1 %}` executes
 * code in 3.2.4 without any constructor). So the hardening is at the source, in four layers, and
 * none of them touches nunjucks' shared module state (no monkeypatching: other Environments in the
 * process keep the stock behaviour):
 *
 *  1. Parse + whitelist (`validate`). We use nunjucks' parser only, then walk every node: only
 *     the node types listed in ALLOWED_NODES pass (no include/import/extends/super/extensions/
 *     async nodes, no regex literals), every name that the compiler will paste into JS source
 *     (variables, set targets, loop variables, macro names and parameters, block names, filter
 *     and test names) must match /^[A-Za-z_][A-Za-z0-9_]*$/, names like `constructor`,
 *     `__proto__`, `prototype` are refused anywhere, only whitelisted filters and tests can be
 *     named, and a call's callee must be a plain name (a macro, `caller` or `range`).
 *
 *  2. Our own code generator (`GuardedCompiler`, a subclass of nunjucks' Compiler that lives in
 *     this module). It overrides every method that emits a variable lookup, attribute access,
 *     call, filter, test, operator, literal, aggregate or output, so the generated code touches
 *     template values only through `runtime.<hook>(...)`; the few inherited methods left
 *     (if/for/set/macro/block/switch) only emit control flow, `frame.*` and `context.*` calls.
 *     Anything the inherited code could emit that we did not route (memberLookup, callWrap,
 *     contextOrFrameLookup, suppressValue, ...) is a stub that throws `template.forbidden`.
 *
 *  3. A private runtime per render (`makeRuntime`): the generated `root(env, context, frame,
 *     runtime, cb)` function receives our runtime object, our Context, our Frame subclass and an
 *     env facade as parameters, never nunjucks' globals. The hooks enforce: lookups read own
 *     properties only (null-prototype scopes, `Object.hasOwn` on data), forbidden names are
 *     refused again at run time, no value is ever a function except macros created by this render
 *     and our `range` (both in a per-render WeakSet; every other function value is refused),
 *     calls go only to those, operators never let JS coerce an object (which could call
 *     `toString`/`valueOf`), strings and aggregates are size-checked when created, and output is
 *     appended through a size check. The only globals are a safe `range()` (cycler, joiner and
 *     lipsum are not provided).
 *
 *  4. Data, not objects: variables are deep-copied with JSON.parse(JSON.stringify(...)) before
 *     rendering, so no live object, getter, prototype or function from the caller is reachable.
 *
 * Bounds. Output: each buffer (the template's, a macro's, a `{% set %}` capture) is checked on
 * every append against maxOutputBytes (UTF-16 units, a lower bound of UTF-8 bytes) and the final
 * string exactly in UTF-8 bytes. Values: every string built by `~`/`+`/filters and every
 * array/dict built by literals, filters and `range()` must weigh at most maxOutputBytes + the
 * size of the variables' JSON (weight = elements + characters, memoised per object, so a
 * `{% set a = [a, a] %}` doubling is caught on its first oversized step). Time: rendering is
 * synchronous; every hook counts a step and every 256 steps (and on every filter, range and
 * large append) reads the clock, and every loop iteration passes through `frame.set`, so a loop
 * of any nesting stops within `timeoutMs` plus one step. A step is a constant amount of generated
 * code plus at most one native operation on a value bounded as above (our filters are linear or
 * n·log n and also count steps inside their loops), so the overshoot is small (milliseconds at
 * the default sizes; it grows with the size of the variables a filter is applied to). Macro
 * recursion is capped at MAX_MACRO_DEPTH. Source: MAX_SOURCE_BYTES.
 *
 * Strict undefined: a missing variable, a missing attribute or index, or an attribute of a
 * missing/null value throws `template.undefined_variable` naming the path (`user.address.city`)
 * wherever it is used (output, `if`, loops, filters, arguments), like Jinja2's StrictUndefined.
 * Only `x is defined` / `x is undefined` and the first argument of `default`/`d` look up leniently.
 * (nunjucks' own `throwOnUndefined` only checks values at `{{ }}` output: `{% if missing %}` and
 * `{{ missing | upper }}` pass silently and the message does not name the variable.) A defined
 * `null` renders as an empty string.
 *
 * Error codes (TemplateError, an AppError with status 422): `template.syntax` the nunjucks parser
 * rejects the source; `template.forbidden` valid nunjucks that this renderer refuses (constructor
 * chains, unknown filters, include/import, non-identifier names, method calls, ...);
 * `template.undefined_variable`; `template.too_large` (source, output, a built value, range, macro
 * depth, nesting); `template.timeout`; `template.render` any other run-time failure (comparing a
 * list with `<`, `sort` on a non-list, variables that are not JSON data).
 */
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { AppError } from '../kernel/errors.ts'

// ---------------------------------------------------------------------------------------------
// Errors

export type TemplateErrorCode =
  | 'template.undefined_variable'
  | 'template.syntax'
  | 'template.forbidden'
  | 'template.too_large'
  | 'template.timeout'
  | 'template.render'

export interface TemplateErrorDetails {
  line?: number | undefined
  column?: number | undefined
  /** For `template.undefined_variable`: the missing path, e.g. `user.address.city`. */
  variable?: string | undefined
  cause?: unknown
}

/** A template failed to compile or render. HTTP 422; `code` says why. */
export class TemplateError extends AppError {
  override name = 'TemplateError'
  readonly line: number | undefined
  readonly column: number | undefined
  readonly variable: string | undefined

  constructor(code: TemplateErrorCode, detail: string, details: TemplateErrorDetails = {}) {
    const where =
      details.line === undefined
        ? ''
        : details.column === undefined
          ? ` (line ${details.line})`
          : ` (line ${details.line}, column ${details.column})`
    super(422, code, detail + where, details.cause === undefined ? {} : { cause: details.cause })
    this.line = details.line
    this.column = details.column
    this.variable = details.variable
  }
}

// ---------------------------------------------------------------------------------------------
// Limits and options

export const MAX_SOURCE_BYTES = 64 * 1024
export const DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024
export const DEFAULT_TIMEOUT_MS = 1000
/** Longest list `range()` may produce (also bounded by the value budget). */
export const MAX_RANGE_LENGTH = 100_000
/** Deepest macro call nesting (recursion). */
export const MAX_MACRO_DEPTH = 64
/** Deepest list/dict nesting that output, `dump`, `tojson` and `join` will serialise. */
const MAX_SERIALIZE_DEPTH = 256
const CACHE_MAX_ENTRIES = 256
const CACHE_MAX_SOURCE_CHARS = 8 * 1024 * 1024
const CLOCK_EVERY = 256

export interface RenderOptions {
  /** Escape HTML in output (Template resources' html_content). Default false: prompts are plain text. */
  autoescape?: boolean
  /** Default 256 KiB; exceeding it throws `template.too_large`. */
  maxOutputBytes?: number
  /** Default 1000 ms; exceeding it throws `template.timeout`. */
  timeoutMs?: number
}

interface ResolvedOptions {
  autoescape: boolean
  maxOutputBytes: number
  timeoutMs: number
}

function resolveOptions(o: RenderOptions | undefined): ResolvedOptions {
  const autoescape = o?.autoescape ?? false
  const maxOutputBytes = o?.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES
  const timeoutMs = o?.timeoutMs ?? DEFAULT_TIMEOUT_MS
  if (typeof autoescape !== 'boolean') throw new TypeError('autoescape must be a boolean')
  if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 1 || maxOutputBytes > 64 * 1024 * 1024) {
    throw new RangeError('maxOutputBytes must be an integer between 1 and 64 MiB')
  }
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > 60_000)
    throw new RangeError('timeoutMs must be in (0, 60000]')
  return { autoescape, maxOutputBytes, timeoutMs }
}

// ---------------------------------------------------------------------------------------------
// The parts of nunjucks we use (CommonJS, no bundled types): parser, nodes, the Compiler class to
// subclass, and runtime.Frame / SafeString / makeMacro / makeKeywordArgs. Nothing is modified.

interface AstNode {
  readonly typename: string
  lineno: number
  colno: number
  value?: unknown
  children?: AstNode[]
  [field: string]: unknown
}
interface CompileFrame {
  lookup(name: string): string | null | undefined
}
interface CompilerBase {
  buffer: string
  _emit(code: string): void
  _emitLine(code: string): void
  _compileExpression(node: AstNode, frame: CompileFrame): void
  _compileAggregate(node: AstNode, frame: CompileFrame, start?: string, end?: string): void
  compile(node: AstNode, frame?: CompileFrame): void
  getCode(): string
}
type CompilerCtor = new (templateName: string | undefined, throwOnUndefined: boolean) => CompilerBase
interface NjFrame {
  parent: NjFrame | undefined
  topLevel: boolean
  variables: Record<string, unknown>
  set(name: string, value: unknown, resolveUp?: boolean): void
  lookup(name: string): unknown
  push(isolateWrites?: boolean): NjFrame
  pop(): NjFrame | undefined
}
type NjFrameCtor = new (parent?: NjFrame, isolateWrites?: boolean) => NjFrame
interface SafeStringLike {
  val: string
  length: number
}
type SafeStringCtor = new (val: string) => SafeStringLike
type Fn = (...args: unknown[]) => unknown
interface Nunjucks {
  parser: { parse(src: string, extensions: unknown[], opts: object): AstNode }
  compiler: { Compiler: CompilerCtor }
  runtime: {
    Frame: NjFrameCtor
    SafeString: SafeStringCtor
    makeMacro(argNames: string[], kwargNames: string[], func: Fn): Fn
    makeKeywordArgs(obj: object): object
  }
}

const nj = createRequire(import.meta.url)('nunjucks') as Nunjucks
const SafeString = nj.runtime.SafeString
const hasOwn = Object.hasOwn
const now = (): number => performance.now()

// ---------------------------------------------------------------------------------------------
// Names

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/
/** Refused as any name, attribute, dict key or attribute-path segment, own property or not. */
const FORBIDDEN_NAMES: ReadonlySet<string> = new Set([
  'constructor',
  'prototype',
  '__proto__',
  '__defineGetter__',
  '__defineSetter__',
  '__lookupGetter__',
  '__lookupSetter__',
])

function forbidden(detail: string, line?: number, column?: number): TemplateError {
  return new TemplateError('template.forbidden', detail, { line, column })
}
function tooLarge(detail: string, line?: number, column?: number): TemplateError {
  return new TemplateError('template.too_large', detail, { line, column })
}
function renderError(detail: string, line?: number, column?: number): TemplateError {
  return new TemplateError('template.render', detail, { line, column })
}
function undefinedVariable(path: string, line?: number, column?: number, why?: string): TemplateError {
  return new TemplateError(
    'template.undefined_variable',
    `'${path}' is undefined${why === undefined ? '' : ` (${why})`}`,
    { line, column, variable: path },
  )
}

// ---------------------------------------------------------------------------------------------
// Layer 1: parse and validate

const ALLOWED_NODES: ReadonlySet<string> = new Set([
  'Root',
  'NodeList',
  'Output',
  'TemplateData',
  'Literal',
  'Symbol',
  'Group',
  'Array',
  'Dict',
  'Pair',
  'KeywordArgs',
  'LookupVal',
  'If',
  'InlineIf',
  'For',
  'Macro',
  'Caller',
  'FunCall',
  'Filter',
  'Block',
  'Set',
  'Switch',
  'Case',
  'Capture',
  'In',
  'Is',
  'Or',
  'And',
  'Not',
  'Add',
  'Concat',
  'Sub',
  'Mul',
  'Div',
  'FloorDiv',
  'Mod',
  'Pow',
  'Neg',
  'Pos',
  'Compare',
  'CompareOperand',
])
const NODE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  Include: '{% include %}',
  Import: '{% import %}',
  FromImport: '{% from ... import %}',
  Extends: '{% extends %}',
  Super: 'super()',
  CallExtension: 'custom tags',
  CallExtensionAsync: 'custom tags',
  FilterAsync: 'async filters',
  IfAsync: '{% ifAsync %}',
  AsyncEach: '{% asyncEach %}',
  AsyncAll: '{% asyncAll %}',
}

const pos1 = (n: AstNode): [number, number] => [n.lineno + 1, n.colno + 1]

function checkName(name: unknown, n: AstNode, what: string): string {
  const [line, col] = pos1(n)
  if (typeof name !== 'string' || !IDENT.test(name)) {
    throw forbidden(
      `the ${what} ${JSON.stringify(String(name))} is not allowed: names are letters, digits and _`,
      line,
      col,
    )
  }
  if (FORBIDDEN_NAMES.has(name)) throw forbidden(`the name '${name}' is not allowed`, line, col)
  return name
}

function isNode(v: unknown): v is AstNode {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { typename?: unknown }).typename === 'string' &&
    typeof (v as { lineno?: unknown }).lineno === 'number'
  )
}

function childrenOf(n: AstNode): AstNode[] {
  // Every own property, not just `fields`: nunjucks keeps `Set.body` outside its field list.
  const out: AstNode[] = []
  for (const key of Object.keys(n)) {
    const v = n[key]
    if (isNode(v)) out.push(v)
    else if (Array.isArray(v)) for (const x of v) if (isNode(x)) out.push(x)
  }
  return out
}

function requireSymbol(n: unknown, owner: AstNode, what: string): AstNode {
  if (!isNode(n) || n.typename !== 'Symbol') {
    const [line, col] = pos1(owner)
    throw forbidden(`${what} must be a plain name`, line, col)
  }
  return n
}

/** The test name of the right side of `is`: a name, a call of a name (`divisibleby(3)`) or `none`. */
function testNameOf(right: AstNode): string | undefined {
  if (right.typename === 'Symbol') return right.value as string
  if (right.typename === 'FunCall' && isNode(right['name']) && right['name'].typename === 'Symbol')
    return right['name'].value as string
  if (right.typename === 'Literal' && right.value === null) return 'none'
  return undefined
}

function checkSignature(args: unknown, owner: AstNode): void {
  if (!isNode(args)) return
  const list = args.children ?? []
  list.forEach((a, i) => {
    if (i === list.length - 1 && (a.typename === 'KeywordArgs' || a.typename === 'Dict')) {
      for (const p of a.children ?? [])
        checkName(requireSymbol(p['key'], owner, 'a macro keyword parameter').value, p, 'parameter name')
    } else {
      checkName(requireSymbol(a, owner, 'a macro parameter').value, a, 'parameter name')
    }
  })
}

function validate(n: AstNode): void {
  const [line, col] = pos1(n)
  if (!ALLOWED_NODES.has(n.typename)) {
    throw forbidden(`${NODE_DESCRIPTIONS[n.typename] ?? n.typename} is not available in templates`, line, col)
  }
  switch (n.typename) {
    case 'Symbol':
      checkName(n.value, n, 'name')
      break
    case 'Literal':
    case 'TemplateData': {
      const v = n.value
      if (!(v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')) {
        throw forbidden('regular expression literals are not available in templates', line, col)
      }
      break
    }
    case 'LookupVal': {
      const key = n['val']
      if (
        isNode(key) &&
        key.typename === 'Literal' &&
        typeof key.value === 'string' &&
        FORBIDDEN_NAMES.has(key.value)
      ) {
        throw forbidden(`the attribute '${key.value}' is not allowed`, line, col)
      }
      break
    }
    case 'Pair': {
      const key = n['key']
      if (
        !isNode(key) ||
        !(key.typename === 'Symbol' || (key.typename === 'Literal' && typeof key.value === 'string'))
      ) {
        throw forbidden('dict keys must be strings or names', line, col)
      }
      if (FORBIDDEN_NAMES.has(key.value as string))
        throw forbidden(`the key '${String(key.value)}' is not allowed`, line, col)
      break
    }
    case 'FunCall':
      requireSymbol(n['name'], n, 'only a macro, caller or range can be called, and the callee')
      break
    case 'Filter': {
      const name = checkName(requireSymbol(n['name'], n, 'a filter').value, n, 'filter name')
      if (!hasOwn(FILTERS, name)) throw forbidden(`the filter '${name}' is not available`, line, col)
      break
    }
    case 'Is': {
      const right = n['right']
      const name = isNode(right) ? testNameOf(right) : undefined
      if (name === undefined) throw forbidden("'is' must be followed by a test name", line, col)
      if (!hasOwn(TESTS, name)) throw forbidden(`the test '${name}' is not available`, line, col)
      break
    }
    case 'Set':
      for (const t of (n['targets'] as unknown[]) ?? [])
        checkName(requireSymbol(t, n, 'a {% set %} target').value, n, 'variable name')
      break
    case 'For': {
      const name = n['name']
      if (isNode(name) && name.typename === 'Array') {
        for (const c of name.children ?? []) checkName(requireSymbol(c, n, 'a loop variable').value, n, 'loop variable')
      } else {
        checkName(requireSymbol(name, n, 'a loop variable').value, n, 'loop variable')
      }
      break
    }
    case 'Macro':
    case 'Caller':
      checkName(requireSymbol(n['name'], n, 'a macro name').value, n, 'macro name')
      checkSignature(n['args'], n)
      break
    case 'Block':
      checkName(requireSymbol(n['name'], n, 'a block name').value, n, 'block name')
      break
    case 'CompareOperand':
      if (!['==', '===', '!=', '!==', '<', '>', '<=', '>='].includes(n['type'] as string))
        throw forbidden('unknown comparison operator', line, col)
      break
  }
  for (const c of childrenOf(n)) validate(c)
}

// ---------------------------------------------------------------------------------------------
// Layer 2: code generation. Every emitted name is an IDENT (validated) or a JSON string literal.

const q = (s: string): string => JSON.stringify(s)
const at = (n: AstNode): string => `${n.lineno + 1},${n.colno + 1}`
const LENIENT_FILTERS: ReadonlySet<string> = new Set(['default', 'd'])
const LENIENT_TESTS: ReadonlySet<string> = new Set(['defined', 'undefined'])
const ARITH: Readonly<Record<string, string>> = { Sub: '-', Mul: '*', Div: '/', Mod: '%', FloorDiv: '//', Pow: '**' }

/** A readable path for messages: `user.address`, `items[0]`, `x[…]`. */
function describe(n: AstNode): string {
  if (n.typename === 'Symbol') return n.value as string
  if (n.typename === 'LookupVal') {
    const target = describe(n['target'] as AstNode)
    const key = n['val'] as AstNode
    if (key.typename === 'Literal' && typeof key.value === 'string')
      return IDENT.test(key.value) ? `${target}.${key.value}` : `${target}[${JSON.stringify(key.value)}]`
    if (key.typename === 'Literal' && typeof key.value === 'number') return `${target}[${key.value}]`
    return `${target}[…]`
  }
  if (n.typename === 'FunCall') return `${describe(n['name'] as AstNode)}(…)`
  if (n.typename === 'Literal')
    return typeof n.value === 'string'
      ? JSON.stringify(n.value.length > 20 ? n.value.slice(0, 20) + '…' : n.value)
      : String(n.value)
  return '(expression)'
}

const NjCompiler = nj.compiler.Compiler

class GuardedCompiler extends NjCompiler {
  // nunjucks' Compiler names its emit helpers with a leading underscore; these wrappers are the only uses.
  /* oxlint-disable no-underscore-dangle */
  emit(code: string): void {
    this._emit(code)
  }

  emitLine(code: string): void {
    this._emitLine(code)
  }

  expr(node: AstNode, frame: CompileFrame): void {
    this._compileExpression(node, frame)
  }

  aggregate(node: AstNode, frame: CompileFrame, start?: string, end?: string): void {
    this._compileAggregate(node, frame, start, end)
  }
  /* oxlint-enable no-underscore-dangle */

  // Literals: JSON string escaping (nunjucks escapes by hand and passes numbers through toString).
  compileLiteral(node: AstNode): void {
    const v = node.value
    if (typeof v === 'string') this.emit(q(v))
    else if (v === null) this.emit('null')
    else if (typeof v === 'boolean') this.emit(v ? 'true' : 'false')
    else if (typeof v === 'number')
      this.emit(Number.isNaN(v) ? 'NaN' : v === Infinity ? 'Infinity' : v === -Infinity ? '-Infinity' : String(v))
    else throw forbidden('unsupported literal', node.lineno + 1, node.colno + 1)
  }

  compileTemplateData(node: AstNode): void {
    this.compileLiteral(node)
  }

  emitSymbol(node: AstNode, frame: CompileFrame, strict: boolean): void {
    const name = node.value as string
    const local = frame.lookup(name)
    if (local) {
      // A compile-time local (set/loop variable, macro argument, macro): undefined if its `set`
      // never ran or the argument was not passed.
      this.emit(strict ? `runtime.defined(${local},${q(name)},${at(node)})` : local)
    } else {
      this.emit(`runtime.lookup(context,frame,${q(name)},${strict},${at(node)})`)
    }
  }

  emitLookupVal(node: AstNode, frame: CompileFrame, strict: boolean): void {
    const target = node['target'] as AstNode
    this.emit('runtime.member(')
    if (strict) this.expr(target, frame)
    else this.emitLenient(target, frame)
    this.emit(',')
    this.expr(node['val'] as AstNode, frame)
    this.emit(`,${q(describe(target))},${strict},${at(node)})`)
  }

  /** `x`, `x.y`, `x[k]` looked up without failing on undefined; anything else compiled strictly. */
  emitLenient(node: AstNode, frame: CompileFrame): void {
    if (node.typename === 'Symbol') this.emitSymbol(node, frame, false)
    else if (node.typename === 'LookupVal') this.emitLookupVal(node, frame, false)
    else this.compile(node, frame)
  }

  compileSymbol(node: AstNode, frame: CompileFrame): void {
    this.emitSymbol(node, frame, true)
  }

  compileLookupVal(node: AstNode, frame: CompileFrame): void {
    this.emitLookupVal(node, frame, true)
  }

  compileFunCall(node: AstNode, frame: CompileFrame): void {
    const callee = node['name'] as AstNode
    this.emit(`(lineno = ${node.lineno}, colno = ${node.colno}, runtime.call(`)
    this.expr(callee, frame)
    this.emit(`,${q(describe(callee))},context,`)
    this.aggregate(node['args'] as AstNode, frame, '[', ']')
    this.emit(`,${at(node)}))`)
  }

  compileFilter(node: AstNode, frame: CompileFrame): void {
    const name = (node['name'] as AstNode).value as string
    this.emit(`runtime.filter(${q(name)},${at(node)},[`)
    ;((node['args'] as AstNode).children ?? []).forEach((a, i) => {
      if (i > 0) this.emit(',')
      if (i === 0 && LENIENT_FILTERS.has(name)) this.emitLenient(a, frame)
      else this.compile(a, frame)
    })
    this.emit('])')
  }

  compileIs(node: AstNode, frame: CompileFrame): void {
    const right = node['right'] as AstNode
    const name = testNameOf(right) as string
    this.emit(`(runtime.test(${q(name)},${at(node)},[`)
    if (LENIENT_TESTS.has(name)) this.emitLenient(node['left'] as AstNode, frame)
    else this.expr(node['left'] as AstNode, frame)
    if (right.typename === 'FunCall') {
      for (const a of (right['args'] as AstNode).children ?? []) {
        this.emit(',')
        this.compile(a, frame)
      }
    }
    this.emit(']) === true)')
  }

  compileIn(node: AstNode, frame: CompileFrame): void {
    this.emitCall('runtime.inOp', [node['left'] as AstNode, node['right'] as AstNode], frame)
  }

  emitCall(fn: string, args: AstNode[], frame: CompileFrame, prefix = ''): void {
    this.emit(`${fn}(${prefix}`)
    args.forEach((a, i) => {
      if (i > 0) this.emit(',')
      this.expr(a, frame)
    })
    this.emit(')')
  }

  compileAdd(node: AstNode, frame: CompileFrame): void {
    this.emitCall('runtime.add', [node['left'] as AstNode, node['right'] as AstNode], frame)
  }

  compileConcat(node: AstNode, frame: CompileFrame): void {
    this.emitCall('runtime.concat', [node['left'] as AstNode, node['right'] as AstNode], frame)
  }

  emitArith(node: AstNode, frame: CompileFrame): void {
    this.emitCall(
      'runtime.arith',
      [node['left'] as AstNode, node['right'] as AstNode],
      frame,
      `${q(ARITH[node.typename] as string)},`,
    )
  }

  compileSub(node: AstNode, frame: CompileFrame): void {
    this.emitArith(node, frame)
  }

  compileMul(node: AstNode, frame: CompileFrame): void {
    this.emitArith(node, frame)
  }

  compileDiv(node: AstNode, frame: CompileFrame): void {
    this.emitArith(node, frame)
  }

  compileMod(node: AstNode, frame: CompileFrame): void {
    this.emitArith(node, frame)
  }

  compileFloorDiv(node: AstNode, frame: CompileFrame): void {
    this.emitArith(node, frame)
  }

  compilePow(node: AstNode, frame: CompileFrame): void {
    this.emitArith(node, frame)
  }

  compileNeg(node: AstNode, frame: CompileFrame): void {
    this.emitCall('runtime.unary', [node['target'] as AstNode], frame, '"-",')
  }

  compilePos(node: AstNode, frame: CompileFrame): void {
    this.emitCall('runtime.unary', [node['target'] as AstNode], frame, '"+",')
  }

  compileNot(node: AstNode, frame: CompileFrame): void {
    this.emit('!(')
    this.expr(node['target'] as AstNode, frame)
    this.emit(')')
  }

  compileCompare(node: AstNode, frame: CompileFrame): void {
    // Left-associative like nunjucks: a < b < c is cmp(cmp(a, "<", b), "<", c).
    const ops = (node['ops'] as AstNode[]) ?? []
    this.emit('runtime.cmp('.repeat(ops.length))
    this.expr(node['expr'] as AstNode, frame)
    for (const op of ops) {
      this.emit(`,${q(op['type'] as string)},`)
      this.expr(op['expr'] as AstNode, frame)
      this.emit(')')
    }
  }

  compileArray(node: AstNode, frame: CompileFrame): void {
    this.emit('runtime.arr(')
    this.aggregate(node, frame, '[', ']')
    this.emit(')')
  }

  compileDict(node: AstNode, frame: CompileFrame): void {
    this.emit('runtime.dict(')
    this.aggregate(node, frame, '[', ']')
    this.emit(')')
  }

  compilePair(node: AstNode, frame: CompileFrame): void {
    const key = node['key'] as AstNode
    this.emit(`[${q(key.value as string)},`)
    this.expr(node['value'] as AstNode, frame)
    this.emit(']')
  }

  compileOutput(node: AstNode, frame: CompileFrame): void {
    for (const child of node.children ?? []) {
      if (child.typename === 'TemplateData') {
        if (child.value) this.emitLine(`${this.buffer} = runtime.text(${this.buffer},${q(child.value as string)});`)
      } else {
        this.emit(`${this.buffer} = runtime.out(${this.buffer},`)
        this.compile(child, frame)
        this.emitLine(`,env.opts.autoescape,${at(child)});`)
      }
    }
  }

  // Refused outright (also refused by `validate`; this is the second line).
  compileInclude(node: AstNode): void {
    refuseNode(node)
  }

  compileImport(node: AstNode): void {
    refuseNode(node)
  }

  compileFromImport(node: AstNode): void {
    refuseNode(node)
  }

  compileExtends(node: AstNode): void {
    refuseNode(node)
  }

  compileSuper(node: AstNode): void {
    refuseNode(node)
  }

  compileCallExtension(node: AstNode): void {
    refuseNode(node)
  }

  compileCallExtensionAsync(node: AstNode): void {
    refuseNode(node)
  }

  compileFilterAsync(node: AstNode): void {
    refuseNode(node)
  }

  compileIfAsync(node: AstNode): void {
    refuseNode(node)
  }

  compileAsyncEach(node: AstNode): void {
    refuseNode(node)
  }

  compileAsyncAll(node: AstNode): void {
    refuseNode(node)
  }
}

function refuseNode(node: AstNode): never {
  throw forbidden(
    `${NODE_DESCRIPTIONS[node.typename] ?? node.typename} is not available in templates`,
    node.lineno + 1,
    node.colno + 1,
  )
}

// ---------------------------------------------------------------------------------------------
// Compile + bounded cache

type RootFn = (
  env: unknown,
  context: RenderContext,
  frame: NjFrame,
  runtime: object,
  cb: (err: unknown, res?: string) => void,
) => void
type BlockFn = RootFn
interface CompiledTemplate {
  root: RootFn
  blocks: [string, BlockFn][]
}

const cache = new Map<string, CompiledTemplate>()
let cachedChars = 0

function compileSource(source: string): CompiledTemplate {
  if (typeof source !== 'string') throw new TypeError('template source must be a string')
  if (source.length > MAX_SOURCE_BYTES || Buffer.byteLength(source, 'utf8') > MAX_SOURCE_BYTES) {
    throw tooLarge(`template source is larger than ${MAX_SOURCE_BYTES} bytes`)
  }
  const hit = cache.get(source)
  if (hit !== undefined) {
    cache.delete(source)
    cache.set(source, hit)
    return hit
  }
  let ast: AstNode
  try {
    ast = nj.parser.parse(source, [], {})
  } catch (err) {
    if (err instanceof RangeError) throw tooLarge('template is nested too deeply')
    const e = syntaxError(err)
    if (e.line !== undefined || !(err instanceof Error)) throw e
    // nunjucks reports no position when it runs out of input: point at the end of the source.
    const lines = source.split('\n')
    throw syntaxError(err, lines.length, (lines[lines.length - 1] ?? '').length + 1)
  }
  let code: string
  try {
    validate(ast)
    const compiler = new GuardedCompiler(undefined, false)
    compiler.compile(ast)
    code = compiler.getCode()
  } catch (err) {
    if (err instanceof TemplateError) throw err
    if (err instanceof RangeError) throw tooLarge('template is nested too deeply', undefined, undefined)
    throw syntaxError(err)
  }
  let props: Record<string, unknown>
  try {
    // The generated code only declares functions; nothing runs until root() is called.
    props = new Function(code)() as Record<string, unknown>
  } catch (err) {
    if (err instanceof RangeError) throw tooLarge('template is nested too deeply')
    throw syntaxError(err)
  }
  const compiled: CompiledTemplate = {
    root: props['root'] as RootFn,
    blocks: Object.keys(props)
      .filter((k) => k.startsWith('b_'))
      .map((k) => [k.slice(2), props[k] as BlockFn]),
  }
  cache.set(source, compiled)
  cachedChars += source.length
  while (cache.size > CACHE_MAX_ENTRIES || cachedChars > CACHE_MAX_SOURCE_CHARS) {
    const oldest = cache.keys().next().value as string
    cache.delete(oldest)
    cachedChars -= oldest.length
  }
  return compiled
}

function syntaxError(err: unknown, atLine?: number, atColumn?: number): TemplateError {
  if (err instanceof TemplateError) return err
  const e = err as { message?: unknown; lineno?: unknown; colno?: unknown }
  const raw = typeof e?.message === 'string' ? e.message : String(err)
  // nunjucks messages may carry "(unknown path) [Line x, Column y]\n  " prefixes; keep the text.
  const text = raw.replace(/^\(unknown path\)\s*(\[[^\]]*\])?\s*/, '').trim()
  const line = typeof e?.lineno === 'number' ? e.lineno : atLine
  const column = typeof e?.colno === 'number' ? e.colno : atColumn
  return new TemplateError('template.syntax', `template syntax error: ${text}`, { line, column, cause: err })
}

/** Entries currently in the compile cache (for tests and metrics). */
export function templateCacheSize(): number {
  return cache.size
}

// ---------------------------------------------------------------------------------------------
// Layer 3: the per-render runtime

interface RenderState {
  readonly deadline: number
  readonly timeoutMs: number
  /** Max UTF-16 units in any one output buffer. */
  readonly outputCap: number
  /** Max weight of any string or aggregate built while rendering. */
  readonly valueCap: number
  readonly weights: WeakMap<object, number>
  readonly callables: WeakSet<object>
  steps: number
  depth: number
}

function clock(s: RenderState): void {
  if (now() > s.deadline) throw new TemplateError('template.timeout', `template rendering exceeded ${s.timeoutMs} ms`)
}
function step(s: RenderState): void {
  if (++s.steps % CLOCK_EVERY === 0) clock(s)
}

/** A nunjucks Frame (scope) whose writes and pushes count as steps; every loop iteration sets. */
class GuardedFrame extends (nj.runtime.Frame as NjFrameCtor) {
  readonly state: RenderState
  constructor(parent: NjFrame | undefined, isolateWrites: boolean, state: RenderState) {
    super(parent, isolateWrites)
    this.state = state
  }

  override set(name: string, value: unknown, resolveUp?: boolean): void {
    step(this.state)
    super.set(name, value, resolveUp)
  }

  override push(isolateWrites?: boolean): NjFrame {
    step(this.state)
    return new GuardedFrame(this, isolateWrites === true, this.state)
  }
}

/** What the generated code calls `context`: the variables (null-prototype) plus our globals. */
class RenderContext {
  readonly ctx: Record<string, unknown>
  readonly globals: Record<string, unknown>
  readonly blocks: Record<string, BlockFn[]> = Object.create(null) as Record<string, BlockFn[]>
  constructor(ctx: Record<string, unknown>, globals: Record<string, unknown>) {
    this.ctx = ctx
    this.globals = globals
  }

  lookup(name: string): unknown {
    if (hasOwn(this.ctx, name)) return this.ctx[name]
    if (hasOwn(this.globals, name)) return this.globals[name]
    return undefined
  }

  setVariable(name: string, value: unknown): void {
    if (FORBIDDEN_NAMES.has(name)) throw forbidden(`the name '${name}' is not allowed`)
    this.ctx[name] = value
  }

  getVariables(): Record<string, unknown> {
    return this.ctx
  }

  addBlock(name: string, block: BlockFn): this {
    ;(this.blocks[name] ??= []).push(block)
    return this
  }

  getBlock(name: string): BlockFn {
    const block = hasOwn(this.blocks, name) ? this.blocks[name]?.[0] : undefined
    if (block === undefined) throw renderError(`unknown block '${name}'`)
    return block
  }

  getSuper(): never {
    throw forbidden('super() is not available in templates')
  }

  addExport(): void {}
}

const isSafe = (v: unknown): v is SafeStringLike => v instanceof SafeString
const plain = (v: unknown): unknown => (isSafe(v) ? v.val : v)

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;',
  )
}

/** The weight of a value: characters of strings plus one per element/key, memoised per object. */
function weigh(s: RenderState, v: unknown): number {
  if (typeof v === 'string') return v.length + 1
  if (v === null || typeof v !== 'object') return 1
  if (isSafe(v)) return v.val.length + 1
  const known = s.weights.get(v)
  if (known !== undefined) return known
  let w = 1
  if (Array.isArray(v)) {
    for (const x of v as unknown[]) {
      w += weigh(s, x)
      if (w > s.valueCap) throw tooLarge(`a value built by the template exceeds ${s.valueCap} units`)
    }
  } else {
    for (const k of Object.keys(v)) {
      w += k.length + weigh(s, (v as Record<string, unknown>)[k])
      if (w > s.valueCap) throw tooLarge(`a value built by the template exceeds ${s.valueCap} units`)
    }
  }
  s.weights.set(v, w)
  return w
}

/** Checks a value produced by the template (filter result, concatenation) against the budget. */
function bounded<T>(s: RenderState, v: T): T {
  if (typeof v === 'string' && v.length > s.valueCap)
    throw tooLarge(`a string built by the template exceeds ${s.valueCap} characters`)
  if (typeof v === 'object' && v !== null) weigh(s, v)
  return v
}

/** Output/string conversion without ever calling a value's own toString/valueOf. */
function toText(s: RenderState, v: unknown, limit: number, depth = 0): string {
  if (typeof v === 'string') return v
  if (v === undefined || v === null) return ''
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  if (isSafe(v)) return v.val
  if (typeof v === 'function') throw forbidden('a macro cannot be converted to text; call it')
  if (Array.isArray(v)) {
    if (depth > MAX_SERIALIZE_DEPTH) throw tooLarge('value nested too deeply to print')
    let out = ''
    for (let i = 0; i < v.length; i++) {
      step(s)
      if (i > 0) out += ','
      out += toText(s, v[i], limit, depth + 1)
      if (out.length > limit) throw tooLarge(`text exceeds ${limit} characters`)
    }
    return out
  }
  return '[object Object]'
}

function isPrimitive(v: unknown): v is string | number | boolean | null | undefined {
  return v === null || v === undefined || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
}

/** Numbers for arithmetic: never coerces an object (that would call its valueOf/toString). */
function num(v: unknown): number {
  const p = plain(v)
  if (typeof p === 'number') return p
  if (typeof p === 'boolean' || p === null) return Number(p)
  if (typeof p === 'string') return Number(p)
  return NaN
}

function compareValues(a: unknown, op: string, b: unknown): boolean {
  const x = plain(a)
  const y = plain(b)
  if (isPrimitive(x) && isPrimitive(y)) {
    switch (op) {
      case '==':
        // oxlint-disable-next-line eqeqeq -- Jinja/nunjucks `==` is loose for primitives (1 == "1")
        return x == y
      case '===':
        return x === y
      case '!=':
        // oxlint-disable-next-line eqeqeq -- see above
        return x != y
      case '!==':
        return x !== y
      case '<':
        return (x as number) < (y as number)
      case '>':
        return (x as number) > (y as number)
      case '<=':
        return (x as number) <= (y as number)
      case '>=':
        return (x as number) >= (y as number)
    }
  }
  // Lists, dicts, macros: identity only; ordering them is an error instead of a JS coercion.
  if (op === '==' || op === '===') return x === y
  if (op === '!=' || op === '!==') return x !== y
  throw renderError(`cannot compare a ${typeName(x)} with a ${typeName(y)} using ${op}`)
}

function typeName(v: unknown): string {
  if (v === null || v === undefined) return 'none'
  if (Array.isArray(v)) return 'list'
  if (typeof v === 'object') return 'dict'
  if (typeof v === 'function') return 'macro'
  return typeof v
}

function refuse(what: string): () => never {
  return () => {
    throw forbidden(`${what} is not available in this renderer`)
  }
}

function toTemplateError(err: unknown, line?: number, column?: number): TemplateError {
  if (err instanceof TemplateError) return err
  if (err instanceof RangeError)
    return tooLarge(`template exceeded a size or depth limit: ${err.message}`, line, column)
  const message = err instanceof Error ? err.message : String(err)
  return new TemplateError('template.render', `template rendering failed: ${message}`, { line, column, cause: err })
}

function makeRuntime(s: RenderState): { runtime: Readonly<Record<string, unknown>>; range: Fn } {
  const range = (...args: unknown[]): number[] => {
    clock(s)
    const nums = args.filter((a) => !(typeof a === 'object' && a !== null && hasOwn(a, '__keywords')))
    if (nums.length < 1 || nums.length > 3 || !nums.every((a) => typeof a === 'number' && Number.isFinite(a))) {
      throw renderError('range() takes 1 to 3 finite numbers')
    }
    const [a, b, c] = nums as number[]
    const start = nums.length === 1 ? 0 : (a as number)
    const stop = nums.length === 1 ? (a as number) : (b as number)
    const by = nums.length === 3 ? (c as number) : 1
    if (by === 0) throw renderError('range() step must not be zero')
    const n = Math.max(0, Math.ceil((stop - start) / by))
    const cap = Math.min(MAX_RANGE_LENGTH, s.valueCap)
    if (n > cap) throw tooLarge(`range() of ${n} items exceeds ${cap}`)
    const out = new Array<number>(n)
    for (let i = 0; i < n; i++) out[i] = start + i * by
    s.weights.set(out, n + 1)
    return out
  }
  s.callables.add(range)

  const runtime: Record<string, unknown> = {
    // --- used by inherited nunjucks code generation (control flow, macros, sets)
    Frame: function Frame(): NjFrame {
      return new GuardedFrame(undefined, false, s)
    },
    SafeString,
    makeKeywordArgs: nj.runtime.makeKeywordArgs,
    isArray: Array.isArray,
    keys: (o: object) => Object.keys(o),
    makeMacro(argNames: string[], kwargNames: string[], func: Fn): Fn {
      const inner = nj.runtime.makeMacro(argNames, kwargNames, func)
      const macro = function (this: unknown, ...args: unknown[]): unknown {
        if (s.depth >= MAX_MACRO_DEPTH) throw tooLarge(`macro calls nested deeper than ${MAX_MACRO_DEPTH}`)
        s.depth++
        try {
          return Reflect.apply(inner, this, args)
        } finally {
          s.depth--
        }
      }
      s.callables.add(macro)
      return macro
    },
    fromIterator(v: unknown): unknown {
      step(s)
      if (isSafe(v)) return v.val
      if (typeof v === 'function') throw forbidden('cannot loop over a macro')
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return v
      // `for k, v in dict` uses for-in: give it a null-prototype copy of the own keys only.
      const copy = Object.create(null) as Record<string, unknown>
      for (const k of Object.keys(v)) copy[k] = (v as Record<string, unknown>)[k]
      return copy
    },
    handleError: (err: unknown, lineno: number, colno: number) => toTemplateError(err, lineno + 1, colno + 1),

    // --- our hooks (GuardedCompiler emits these)
    lookup(context: RenderContext, frame: NjFrame, name: string, strict: boolean, line: number, col: number): unknown {
      step(s)
      if (FORBIDDEN_NAMES.has(name)) throw forbidden(`the name '${name}' is not allowed`, line, col)
      let v = frame.lookup(name)
      if (v === undefined) v = context.lookup(name)
      if (v === undefined && strict) throw undefinedVariable(name, line, col)
      if (typeof v === 'function' && !s.callables.has(v))
        throw forbidden(`'${name}' is not a template value`, line, col)
      return v
    },
    defined(v: unknown, name: string, line: number, col: number): unknown {
      if (v === undefined) throw undefinedVariable(name, line, col)
      return v
    },
    member(obj: unknown, key: unknown, path: string, strict: boolean, line: number, col: number): unknown {
      step(s)
      const k = plain(key)
      if (typeof k !== 'string' && typeof k !== 'number')
        throw forbidden(`attribute names must be strings or numbers (in ${path}[…])`, line, col)
      if (typeof k === 'string' && FORBIDDEN_NAMES.has(k))
        throw forbidden(`the attribute '${k}' is not allowed`, line, col)
      const name =
        typeof k === 'number' ? `${path}[${k}]` : IDENT.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`
      const target = plain(obj)
      if (target === undefined || target === null) {
        if (strict) throw undefinedVariable(name, line, col, `${path} is ${target === null ? 'none' : 'undefined'}`)
        return undefined
      }
      if (typeof target === 'function') throw forbidden(`cannot read attributes of a macro (${name})`, line, col)
      if ((typeof target !== 'object' && typeof target !== 'string') || !hasOwn(Object(target), k)) {
        if (strict) throw undefinedVariable(name, line, col)
        return undefined
      }
      const v = (target as Record<string | number, unknown>)[k]
      if (typeof v === 'function' && !s.callables.has(v))
        throw forbidden(`'${name}' is not a template value`, line, col)
      return v
    },
    call(fn: unknown, name: string, context: RenderContext, args: unknown[], line: number, col: number): unknown {
      step(s)
      if (typeof fn !== 'function' || !s.callables.has(fn)) {
        throw forbidden(`'${name}' cannot be called: only macros, caller() and range() are callable`, line, col)
      }
      return Reflect.apply(fn, context, args)
    },
    filter(name: string, line: number, col: number, args: unknown[]): unknown {
      clock(s)
      const f = hasOwn(FILTERS, name) ? FILTERS[name] : undefined
      if (f === undefined) throw forbidden(`the filter '${name}' is not available`, line, col)
      try {
        return bounded(s, f(s, ...args))
      } catch (err) {
        throw toTemplateError(err, line, col)
      }
    },
    test(name: string, line: number, col: number, args: unknown[]): boolean {
      step(s)
      const f = hasOwn(TESTS, name) ? TESTS[name] : undefined
      if (f === undefined) throw forbidden(`the test '${name}' is not available`, line, col)
      return f(s, ...args) === true
    },
    inOp(key: unknown, container: unknown): boolean {
      step(s)
      const k = plain(key)
      const c = plain(container)
      if (Array.isArray(c)) return c.some((x) => plain(x) === k)
      if (typeof c === 'string') {
        if (typeof k !== 'string' && typeof k !== 'number')
          throw renderError(`cannot look for a ${typeName(k)} in a string`)
        return c.includes(String(k))
      }
      if (c !== null && typeof c === 'object') return (typeof k === 'string' || typeof k === 'number') && hasOwn(c, k)
      throw renderError(`cannot use 'in' on a ${typeName(c)}`)
    },
    add(a: unknown, b: unknown): unknown {
      step(s)
      const x = plain(a)
      const y = plain(b)
      const numeric = (v: unknown): boolean =>
        v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean'
      if (numeric(x) && numeric(y)) return num(x) + num(y)
      return bounded(s, toText(s, x, s.valueCap) + toText(s, y, s.valueCap))
    },
    concat(a: unknown, b: unknown): string {
      step(s)
      return bounded(s, toText(s, a, s.valueCap) + toText(s, b, s.valueCap))
    },
    arith(op: string, a: unknown, b: unknown): number {
      step(s)
      const x = num(a)
      const y = num(b)
      switch (op) {
        case '-':
          return x - y
        case '*':
          return x * y
        case '/':
          return x / y
        case '%':
          return x % y
        case '//':
          return Math.floor(x / y)
        default:
          return x ** y
      }
    },
    unary(op: string, a: unknown): number {
      return op === '-' ? -num(a) : num(a)
    },
    cmp(a: unknown, op: string, b: unknown): boolean {
      step(s)
      return compareValues(a, op, b)
    },
    arr(items: unknown[]): unknown[] {
      step(s)
      weigh(s, items)
      return items
    },
    dict(entries: [string, unknown][]): Record<string, unknown> {
      step(s)
      for (const [k] of entries) if (FORBIDDEN_NAMES.has(k)) throw forbidden(`the key '${k}' is not allowed`)
      const d = Object.fromEntries(entries) as Record<string, unknown>
      weigh(s, d)
      return d
    },
    out(buffer: string, v: unknown, autoescape: boolean, line: number, col: number): string {
      step(s)
      if (typeof v === 'function') throw forbidden('a macro cannot be printed; call it', line, col)
      let text: string
      try {
        text = toText(s, v, s.outputCap)
      } catch (err) {
        throw toTemplateError(err, line, col)
      }
      if (autoescape && !isSafe(v)) text = escapeHtml(text)
      if (buffer.length + text.length > s.outputCap) throw tooLarge(`output exceeds ${s.outputCap} bytes`, line, col)
      if (text.length > 4096) clock(s)
      return buffer + text
    },
    text(buffer: string, text: string): string {
      step(s)
      if (buffer.length + text.length > s.outputCap) throw tooLarge(`output exceeds ${s.outputCap} bytes`)
      return buffer + text
    },

    // --- stock nunjucks entry points we never emit: refuse, so nothing runs unguarded
    memberLookup: refuse('memberLookup'),
    contextOrFrameLookup: refuse('contextOrFrameLookup'),
    callWrap: refuse('callWrap'),
    suppressValue: refuse('suppressValue'),
    ensureDefined: refuse('ensureDefined'),
    inOperator: refuse('inOperator'),
    markSafe: refuse('markSafe'),
    copySafeness: refuse('copySafeness'),
    asyncEach: refuse('asyncEach'),
    asyncAll: refuse('asyncAll'),
    numArgs: refuse('numArgs'),
  }
  return { runtime: Object.freeze(runtime), range: range as Fn }
}

// ---------------------------------------------------------------------------------------------
// Filters and tests: pure functions on data, each bounded (results are weighed by `bounded`).

type FilterFn = (s: RenderState, ...args: unknown[]) => unknown
type TestFn = (s: RenderState, ...args: unknown[]) => boolean

const str = (s: RenderState, v: unknown): string => toText(s, v, s.valueCap)
const keepSafe = (input: unknown, out: string): string | SafeStringLike => (isSafe(input) ? new SafeString(out) : out)
const intArg = (v: unknown, dflt: number): number => {
  if (v === undefined || v === null) return dflt
  const n = Math.trunc(num(v))
  return Number.isFinite(n) ? n : dflt
}

/** `a.b.c` on own properties only (attribute arguments of sort/sum/join/selectattr). */
function attrGetter(attr: unknown): (v: unknown) => unknown {
  if (attr === undefined || attr === null) return (v) => v
  const parts = String(plain(attr)).split('.')
  for (const p of parts) if (FORBIDDEN_NAMES.has(p)) throw forbidden(`the attribute '${p}' is not allowed`)
  return (v) => {
    let cur = plain(v)
    for (const p of parts) {
      if (cur === null || (typeof cur !== 'object' && typeof cur !== 'string') || !hasOwn(Object(cur), p))
        return undefined
      cur = plain((cur as Record<string, unknown>)[p])
    }
    return typeof cur === 'function' ? undefined : cur
  }
}

function sortKey(v: unknown, caseSensitive: boolean): unknown {
  const p = plain(v)
  return typeof p === 'string' && !caseSensitive ? p.toLowerCase() : p
}

function order(s: RenderState, a: unknown, b: unknown): number {
  step(s)
  if (typeof a === 'number' && typeof b === 'number') return a - b
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0
  const rank = (v: unknown): number =>
    v === null || v === undefined
      ? 0
      : typeof v === 'boolean'
        ? 1
        : typeof v === 'number'
          ? 2
          : typeof v === 'string'
            ? 3
            : 4
  const d = rank(a) - rank(b)
  if (d !== 0) return d
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b)
  return 0
}

/**
 * JSON (JSON.stringify's layout) with a running size check that counts every character, indentation
 * included, and a depth limit: JSON.stringify itself cannot be stopped on a shared-subtree value.
 */
function boundedJson(s: RenderState, v: unknown, indentArg: unknown): string | undefined {
  const ind =
    typeof indentArg === 'number'
      ? ' '.repeat(Math.max(0, Math.min(10, Math.trunc(indentArg))))
      : typeof indentArg === 'string'
        ? indentArg.slice(0, 10)
        : ''
  const chunks: string[] = []
  let size = 0
  const put = (t: string): void => {
    size += t.length
    if (size > s.valueCap) throw tooLarge(`JSON output exceeds ${s.valueCap} characters`)
    chunks.push(t)
  }
  const scalar = (p: unknown): string | undefined => {
    if (p === null) return 'null'
    if (typeof p === 'string') return JSON.stringify(p)
    if (typeof p === 'number') return Number.isFinite(p) ? String(p) : 'null'
    if (typeof p === 'boolean') return String(p)
    return undefined
  }
  const skipped = (p: unknown): boolean => p === undefined || typeof p === 'function'
  const enc = (x: unknown, depth: number): void => {
    step(s)
    const p = plain(x)
    const text = scalar(p)
    if (text !== undefined) return put(text)
    if (depth >= MAX_SERIALIZE_DEPTH) throw tooLarge('value nested too deeply for JSON')
    const nl = ind === '' ? '' : '\n' + ind.repeat(depth + 1)
    const close = ind === '' ? '' : '\n' + ind.repeat(depth)
    const isList = Array.isArray(p)
    const keys = isList
      ? []
      : Object.keys(p as object).filter((k) => !skipped(plain((p as Record<string, unknown>)[k])))
    const count = isList ? (p as unknown[]).length : keys.length
    if (count === 0) return put(isList ? '[]' : '{}')
    put(isList ? '[' : '{')
    for (let i = 0; i < count; i++) {
      put(i === 0 ? nl : ',' + nl)
      if (isList) {
        const item = (p as unknown[])[i]
        if (skipped(plain(item))) put('null')
        else enc(item, depth + 1)
      } else {
        const k = keys[i] as string
        put(JSON.stringify(k) + (ind === '' ? ':' : ': '))
        enc((p as Record<string, unknown>)[k], depth + 1)
      }
    }
    put(close + (isList ? ']' : '}'))
  }
  if (skipped(plain(v))) return undefined
  enc(v, 0)
  return chunks.join('')
}

const FILTERS: Readonly<Record<string, FilterFn>> = Object.assign(Object.create(null) as Record<string, FilterFn>, {
  abs: (_s: RenderState, v: unknown) => Math.abs(num(v)),
  capitalize: (s: RenderState, v: unknown) => {
    const t = str(s, v)
    return keepSafe(v, t.charAt(0).toUpperCase() + t.slice(1).toLowerCase())
  },
  center: (s: RenderState, v: unknown, width: unknown) => {
    const t = str(s, v)
    const w = intArg(width, 80)
    if (w > s.valueCap) throw tooLarge(`center() width ${w} exceeds ${s.valueCap}`)
    if (t.length >= w) return keepSafe(v, t)
    const pad = w - t.length
    const left = Math.floor(pad / 2)
    return keepSafe(v, ' '.repeat(left) + t + ' '.repeat(pad - left))
  },
  default: (_s: RenderState, v: unknown, dflt: unknown, boolean: unknown) =>
    boolean === true ? (v ? v : dflt) : v === undefined ? dflt : v,
  dictsort: (s: RenderState, v: unknown, caseSensitive: unknown, by: unknown) => {
    const o = plain(v)
    if (o === null || typeof o !== 'object' || Array.isArray(o)) throw renderError('dictsort expects a dict')
    const idx = by === 'value' ? 1 : 0
    const entries = Object.keys(o).map((k) => [k, (o as Record<string, unknown>)[k]] as [string, unknown])
    return entries.sort((a, b) =>
      order(s, sortKey(a[idx], caseSensitive === true), sortKey(b[idx], caseSensitive === true)),
    )
  },
  dump: (s: RenderState, v: unknown, indent: unknown) => boundedJson(s, v, indent),
  escape: (s: RenderState, v: unknown) => (isSafe(v) ? v : new SafeString(escapeHtml(str(s, v)))),
  first: (_s: RenderState, v: unknown) => {
    const p = plain(v)
    return Array.isArray(p) || typeof p === 'string' ? p[0] : undefined
  },
  float: (s: RenderState, v: unknown, dflt: unknown) => {
    const n = typeof plain(v) === 'number' ? (plain(v) as number) : parseFloat(str(s, v))
    return Number.isNaN(n) ? (dflt ?? 0) : n
  },
  forceescape: (s: RenderState, v: unknown) => new SafeString(escapeHtml(str(s, v))),
  indent: (s: RenderState, v: unknown, width: unknown, indentFirst: unknown) => {
    const t = str(s, v)
    const w = Math.max(0, intArg(width, 4))
    const lines = t.split('\n')
    if (w * lines.length + t.length > s.valueCap) throw tooLarge(`indent() result exceeds ${s.valueCap} characters`)
    const sp = ' '.repeat(w)
    return keepSafe(v, lines.map((l, i) => ((i === 0 && indentFirst !== true) || l === '' ? l : sp + l)).join('\n'))
  },
  int: (s: RenderState, v: unknown, dflt: unknown) => {
    const p = plain(v)
    const n = typeof p === 'number' ? Math.trunc(p) : parseInt(str(s, v), 10)
    return Number.isNaN(n) ? (dflt ?? 0) : n
  },
  join: (s: RenderState, v: unknown, sep: unknown, attr: unknown) => {
    const p = plain(v)
    if (!Array.isArray(p)) return str(s, v)
    const get = attrGetter(attr)
    const d = sep === undefined || sep === null ? '' : str(s, sep)
    let out = ''
    p.forEach((x, i) => {
      step(s)
      if (i > 0) out += d
      out += str(s, get(x))
      if (out.length > s.valueCap) throw tooLarge(`join() result exceeds ${s.valueCap} characters`)
    })
    return out
  },
  last: (_s: RenderState, v: unknown) => {
    const p = plain(v)
    return Array.isArray(p) || typeof p === 'string' ? p[p.length - 1] : undefined
  },
  length: (_s: RenderState, v: unknown) => {
    const p = plain(v)
    if (Array.isArray(p) || typeof p === 'string') return p.length
    if (p !== null && typeof p === 'object') return Object.keys(p).length
    return 0
  },
  list: (s: RenderState, v: unknown) => {
    const p = plain(v)
    if (typeof p === 'string') return bounded(s, [...p])
    if (Array.isArray(p)) return p.slice()
    if (p !== null && typeof p === 'object')
      return Object.keys(p).map((k) => ({ key: k, value: (p as Record<string, unknown>)[k] }))
    throw renderError('list() expects a string, list or dict')
  },
  lower: (s: RenderState, v: unknown) => keepSafe(v, str(s, v).toLowerCase()),
  nl2br: (s: RenderState, v: unknown) => {
    const t = isSafe(v) ? v.val : escapeHtml(str(s, v))
    return new SafeString(t.replace(/\r\n|\n/g, '<br />\n'))
  },
  replace: (s: RenderState, v: unknown, oldArg: unknown, newArg: unknown, maxCount: unknown) => {
    const t = str(s, v)
    const o = plain(oldArg)
    if (typeof o !== 'string' && typeof o !== 'number') throw renderError('replace() expects a string to search for')
    const from = String(o)
    const to = str(s, newArg)
    const limit = maxCount === undefined || maxCount === null || num(maxCount) < 0 ? Infinity : intArg(maxCount, 0)
    const positions: number[] = []
    if (from === '') {
      for (let i = 0; i <= t.length && positions.length < limit; i++) positions.push(i)
    } else {
      for (let i = t.indexOf(from); i !== -1 && positions.length < limit; i = t.indexOf(from, i + from.length)) {
        step(s)
        positions.push(i)
      }
    }
    const size = t.length + positions.length * (to.length - from.length)
    if (size > s.valueCap) throw tooLarge(`replace() result exceeds ${s.valueCap} characters`)
    let out = ''
    let last = 0
    for (const i of positions) {
      step(s)
      out += t.slice(last, i) + to
      last = i + from.length
    }
    return keepSafe(v, out + t.slice(last))
  },
  reverse: (s: RenderState, v: unknown) => {
    const p = plain(v)
    if (typeof p === 'string') return keepSafe(v, [...p].reverse().join(''))
    if (Array.isArray(p)) return p.slice().reverse()
    return str(s, v)
  },
  round: (_s: RenderState, v: unknown, precision: unknown, method: unknown) => {
    const f = 10 ** Math.max(0, Math.min(15, intArg(precision, 0)))
    const x = num(v) * f
    const r = method === 'ceil' ? Math.ceil(x) : method === 'floor' ? Math.floor(x) : Math.round(x)
    return r / f
  },
  safe: (s: RenderState, v: unknown) => (isSafe(v) ? v : new SafeString(str(s, v))),
  selectattr: (_s: RenderState, v: unknown, attr: unknown) => {
    const p = plain(v)
    const get = attrGetter(attr)
    return Array.isArray(p) ? p.filter((x) => Boolean(get(x))) : []
  },
  rejectattr: (_s: RenderState, v: unknown, attr: unknown) => {
    const p = plain(v)
    const get = attrGetter(attr)
    return Array.isArray(p) ? p.filter((x) => !get(x)) : []
  },
  sort: (s: RenderState, v: unknown, reverse: unknown, caseSensitive: unknown, attr: unknown) => {
    const p = plain(v)
    if (!Array.isArray(p)) throw renderError('sort() expects a list')
    const get = attrGetter(attr)
    const dir = reverse === true ? -1 : 1
    return p
      .slice()
      .sort((a, b) => dir * order(s, sortKey(get(a), caseSensitive === true), sortKey(get(b), caseSensitive === true)))
  },
  string: (s: RenderState, v: unknown) => keepSafe(v, str(s, v)),
  striptags: (s: RenderState, v: unknown, preserveLinebreaks: unknown) => {
    // Linear scan (a regex like /<[^>]*>/g is quadratic on "<a<a<a..." and cannot be interrupted).
    const t = str(s, v)
    let out = ''
    let i = 0
    while (i < t.length) {
      const lt = t.indexOf('<', i)
      if (lt === -1) break
      const gt = t.indexOf('>', lt + 1)
      if (gt === -1) break
      const next = t.charAt(lt + 1)
      out += t.slice(i, lt)
      if (/[A-Za-z/!]/.test(next)) {
        out += ' '
        i = gt + 1
      } else {
        out += '<'
        i = lt + 1
      }
    }
    out += t.slice(i)
    const collapsed =
      preserveLinebreaks === true
        ? out
            .split('\n')
            .map((l) => l.replace(/[ \t\f\v\r]+/g, ' ').trim())
            .join('\n')
            .replace(/\n{3,}/g, '\n\n')
        : out.replace(/\s+/g, ' ')
    return collapsed.trim()
  },
  sum: (s: RenderState, v: unknown, attr: unknown, start: unknown) => {
    const p = plain(v)
    if (!Array.isArray(p)) throw renderError('sum() expects a list')
    const get = attrGetter(attr)
    let total = start === undefined ? 0 : num(start)
    for (const x of p) {
      step(s)
      total += num(get(x))
    }
    return total
  },
  title: (s: RenderState, v: unknown) =>
    keepSafe(
      v,
      str(s, v).replace(/\S+/g, (w) => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase()),
    ),
  tojson: (s: RenderState, v: unknown, indent: unknown) => {
    const json = boundedJson(s, v, indent)
    if (json === undefined) return undefined
    // As Jinja2: safe to embed in HTML and <script> (no <, >, & or ' characters).
    return new SafeString(json.replace(/[<>&']/g, (c) => `\\u00${c.charCodeAt(0).toString(16).padStart(2, '0')}`))
  },
  trim: (s: RenderState, v: unknown) => keepSafe(v, str(s, v).trim()),
  truncate: (s: RenderState, v: unknown, length: unknown, killwords: unknown, end: unknown) => {
    const t = str(s, v)
    const n = Math.max(0, intArg(length, 255))
    if (t.length <= n) return keepSafe(v, t)
    let cut = n
    if (killwords !== true) {
      const sp = t.lastIndexOf(' ', n)
      if (sp !== -1) cut = sp
    }
    return keepSafe(v, t.slice(0, cut) + (end === undefined || end === null ? '...' : str(s, end)))
  },
  upper: (s: RenderState, v: unknown) => keepSafe(v, str(s, v).toUpperCase()),
  urlencode: (s: RenderState, v: unknown) => {
    const p = plain(v)
    if (p !== null && typeof p === 'object') {
      const pairs = Array.isArray(p)
        ? (p as unknown[]).map((x) => (Array.isArray(x) ? [x[0], x[1]] : [x, '']))
        : Object.keys(p).map((k) => [k, (p as Record<string, unknown>)[k]])
      return pairs.map(([k, x]) => `${encodeURIComponent(str(s, k))}=${encodeURIComponent(str(s, x))}`).join('&')
    }
    return encodeURIComponent(str(s, v))
  },
  wordcount: (s: RenderState, v: unknown) => (str(s, v).match(/\w+/g) ?? []).length,
})
Object.assign(FILTERS, { count: FILTERS['length'], d: FILTERS['default'], e: FILTERS['escape'] })
Object.freeze(FILTERS)

const cmpTest =
  (op: string): TestFn =>
  (_s, a, b) => {
    try {
      return compareValues(a, op, b)
    } catch {
      return false
    }
  }
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v)

const TESTS: Readonly<Record<string, TestFn>> = Object.freeze(
  Object.assign(Object.create(null) as Record<string, TestFn>, {
    defined: (_s: RenderState, v: unknown) => v !== undefined,
    undefined: (_s: RenderState, v: unknown) => v === undefined,
    none: (_s: RenderState, v: unknown) => v === null,
    null: (_s: RenderState, v: unknown) => v === null,
    number: (_s: RenderState, v: unknown) => typeof v === 'number',
    string: (_s: RenderState, v: unknown) => typeof v === 'string' || isSafe(v),
    boolean: (_s: RenderState, v: unknown) => typeof v === 'boolean',
    odd: (_s: RenderState, v: unknown) => isInt(v) && Math.abs(v % 2) === 1,
    even: (_s: RenderState, v: unknown) => isInt(v) && v % 2 === 0,
    divisibleby: (_s: RenderState, v: unknown, n: unknown) => num(n) !== 0 && num(v) % num(n) === 0,
    eq: cmpTest('==='),
    equalto: cmpTest('==='),
    sameas: cmpTest('==='),
    ne: cmpTest('!=='),
    lt: cmpTest('<'),
    lessthan: cmpTest('<'),
    le: cmpTest('<='),
    gt: cmpTest('>'),
    greaterthan: cmpTest('>'),
    ge: cmpTest('>='),
    truthy: (_s: RenderState, v: unknown) => Boolean(v),
    falsy: (_s: RenderState, v: unknown) => !v,
    iterable: (_s: RenderState, v: unknown) => Array.isArray(v) || typeof v === 'string' || isSafe(v),
    mapping: (_s: RenderState, v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v) && !isSafe(v),
    callable: (s: RenderState, v: unknown) => typeof v === 'function' && s.callables.has(v),
    lower: (_s: RenderState, v: unknown) =>
      typeof plain(v) === 'string' && (plain(v) as string) === (plain(v) as string).toLowerCase(),
    upper: (_s: RenderState, v: unknown) =>
      typeof plain(v) === 'string' && (plain(v) as string) === (plain(v) as string).toUpperCase(),
    escaped: (_s: RenderState, v: unknown) => isSafe(v),
  }),
)

// ---------------------------------------------------------------------------------------------
// Layer 4 + entry points

const ENV_REFUSALS = {
  getTemplate: refuse('include/import/extends'),
  getExtension: refuse('custom tags'),
  getFilter: refuse('getFilter'),
  getTest: refuse('getTest'),
  waterfall: refuse('include'),
}

function copyVariables(variables: Record<string, unknown>): { data: Record<string, unknown>; size: number } {
  if (variables === null || typeof variables !== 'object' || Array.isArray(variables))
    throw new TypeError('template variables must be an object')
  let json: string | undefined
  try {
    json = JSON.stringify(variables)
  } catch (err) {
    if (err instanceof RangeError) throw tooLarge('template variables are nested too deeply')
    throw new TemplateError(
      'template.render',
      `template variables must be JSON data: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    )
  }
  const parsed: unknown = json === undefined ? {} : JSON.parse(json)
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new TypeError('template variables must serialise to a JSON object')
  // Null-prototype top-level scope: `{{ toString }}` finds nothing inherited.
  const data = Object.create(null) as Record<string, unknown>
  for (const k of Object.keys(parsed)) data[k] = (parsed as Record<string, unknown>)[k]
  return { data, size: json?.length ?? 2 }
}

function run(compiled: CompiledTemplate, o: ResolvedOptions, variables: Record<string, unknown>): string {
  const { data, size } = copyVariables(variables)
  const state: RenderState = {
    deadline: now() + o.timeoutMs,
    timeoutMs: o.timeoutMs,
    outputCap: o.maxOutputBytes,
    valueCap: o.maxOutputBytes + size,
    weights: new WeakMap(),
    callables: new WeakSet(),
    steps: 0,
    depth: 0,
  }
  const { runtime, range } = makeRuntime(state)
  // The only global. (nunjucks' cycler/joiner return objects and closures; not provided.)
  const globals = Object.create(null) as Record<string, unknown>
  globals['range'] = range
  const context = new RenderContext(data, globals)
  for (const [name, block] of compiled.blocks) context.addBlock(name, block)
  const env = Object.freeze({
    opts: Object.freeze({ autoescape: o.autoescape, throwOnUndefined: false }),
    ...ENV_REFUSALS,
  })
  const frame = new GuardedFrame(undefined, false, state)
  frame.topLevel = true
  let finished = false
  let failure: unknown
  let result = ''
  try {
    compiled.root(env, context, frame, runtime, (err, res) => {
      if (finished) return
      finished = true
      failure = err
      result = res ?? ''
    })
  } catch (err) {
    failure ??= err
    finished = true
  }
  if (failure !== undefined && failure !== null) throw toTemplateError(failure)
  if (!finished) throw renderError('template did not finish rendering')
  if (Buffer.byteLength(result, 'utf8') > o.maxOutputBytes) throw tooLarge(`output exceeds ${o.maxOutputBytes} bytes`)
  return result
}

/**
 * Compiles once (cached by source, LRU-bounded) and returns a renderer bound to the options.
 * Throws `template.syntax` / `template.forbidden` / `template.too_large` for a bad source.
 */
export function compileTemplate(source: string, o?: RenderOptions): (variables: Record<string, unknown>) => string {
  const opts = resolveOptions(o)
  const compiled = compileSource(source)
  return (variables) => run(compiled, opts, variables)
}

/** Renders a user-authored template with the given variables (see the module comment for guarantees). */
export function renderTemplate(source: string, variables: Record<string, unknown>, o?: RenderOptions): string {
  return compileTemplate(source, o)(variables)
}

/**
 * What saving a resource that carries a template reports for it: nothing when the hardened renderer
 * compiles `source`, else one field issue at `path` — so a bad template is refused when it is saved
 * (422), not when it is rendered. `null` (an absent optional template) has nothing to report.
 */
export function templateIssues(path: string, source: string | null): { path: string; message: string }[] {
  if (source === null) return []
  try {
    compileTemplate(source)
    return []
  } catch (err) {
    if (err instanceof TemplateError) return [{ path, message: `${err.code}: ${err.message}` }]
    throw err
  }
}
