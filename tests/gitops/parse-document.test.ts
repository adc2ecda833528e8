import t from 'tap'
import { documentLimits } from '../../src/gitops/document-limits.ts'
import { formatPath, parsePath } from '../../src/gitops/document-path.ts'
import { parseYamlDocument } from '../../src/gitops/parse-document.ts'
import { caught, LIMITS } from './caught.ts'

/* YAML text -> document: the limits answer clear errors without exhausting anything, and any path maps back to its line and column. */

t.test('a document and its source map', async (t) => {
  const text = 'apiVersion: platform/v1\nspec:\n  agents:\n    - name: a\n    - name: b\n      model: gpt\n'
  const doc = parseYamlDocument(text, LIMITS)
  t.same(doc.value, { apiVersion: 'platform/v1', spec: { agents: [{ name: 'a' }, { name: 'b', model: 'gpt' }] } })
  t.same(doc.positionOf('spec.agents[1].model'), { line: 6, column: 7 }, 'the key of a map entry')
  t.same(doc.positionOf('/spec/agents/1/model'), { line: 6, column: 7 }, 'the JSON Pointer form too')
  t.same(doc.positionOf('spec.agents[1]'), { line: 5, column: 7 }, 'a list item')
  t.equal(doc.positionOf('spec.agents[7]'), undefined, 'absent')
  t.same(
    doc.issueAt('/spec/agents/1/temperature', 'required'),
    { path: 'spec.agents[1].temperature', message: 'required (line 5, column 7)', line: 5, column: 7 },
    'an absent field is placed at its nearest present parent',
  )
  t.same(parseYamlDocument('', LIMITS).value, null, 'an empty text is null (the envelope check refuses it)')
})

t.test('paths read and written', async (t) => {
  t.same(parsePath('spec.agents[2].model'), ['spec', 'agents', 2, 'model'])
  t.same(parsePath('/a/b~1c/0'), ['a', 'b/c', 0])
  t.equal(formatPath(['spec', 'x.y', 3, 'a b']), 'spec["x.y"][3]["a b"]')
  t.same(parsePath(formatPath(['spec', 'x.y', 3, 'a b'])), ['spec', 'x.y', 3, 'a b'], 'round trip')
})

t.test('a syntax error carries its line and column', async (t) => {
  const e = caught(() => parseYamlDocument('spec:\n  agents:\n    - name: "a\n', LIMITS))
  t.equal(e.code, 'config.invalid_yaml')
  t.equal(e.status, 422)
  t.match(e.message, /line \d+, column \d+/)
  t.match(e.issues?.[0], { line: Number, column: Number })
  const flow = caught(() => parseYamlDocument('a: 1\nb: [1, 2\nc: 3\n', LIMITS))
  t.equal(flow.code, 'config.invalid_yaml')
  t.ok(((flow.issues?.[0] as { line?: number } | undefined)?.line ?? 0) >= 2, 'after the opening line')
})

t.test('duplicate keys are refused where the second one is', async (t) => {
  const e = caught(() => parseYamlDocument('spec:\n  agents: []\n  agents: []\n', LIMITS))
  t.equal(e.code, 'config.invalid_yaml')
  t.match(e.message, /duplicate key.*line 3, column 3/)
})

t.test('one document per text', async (t) => {
  const e = caught(() => parseYamlDocument('a: 1\n---\nb: 2\n', LIMITS))
  t.equal(e.code, 'config.invalid_yaml')
  t.match(e.message, /second one starts at line 2/)
})

t.test('an alias bomb is refused, fast', async (t) => {
  const levels = 'bcdefghij'.split('')
  const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
  levels.forEach((c, i) =>
    lines.push(
      `${c}: &${c} [${Array(9)
        .fill(`*${'abcdefghij'[i] as string}`)
        .join(',')}]`,
    ),
  )
  const started = performance.now()
  const e = caught(() => parseYamlDocument(lines.join('\n'), LIMITS))
  t.equal(e.code, 'config.too_many_aliases')
  t.ok(performance.now() - started < 1000, 'well under a second (9^10 strings were asked for)')
  t.same(
    parseYamlDocument('a: &x {k: 1}\nb: *x\n', LIMITS).value,
    { a: { k: 1 }, b: { k: 1 } },
    'a few aliases are fine',
  )
})

t.test('a 50 MB text is refused before it is parsed', async (t) => {
  const text = `a: "${'x'.repeat(50 * 1024 * 1024)}"`
  const started = performance.now()
  const e = caught(() => parseYamlDocument(text, LIMITS))
  t.equal(e.code, 'config.too_large')
  t.equal(e.status, 413)
  t.match(e.message, /5242880 bytes \(CONFIG_MAX_BYTES\)/)
  t.ok(performance.now() - started < 200, 'without reading it')
  const wide = caught(() => parseYamlDocument('é'.repeat(600), { ...LIMITS, maxBytes: 1024 }))
  t.equal(wide.code, 'config.too_large', 'bytes are counted, not characters')
})

t.test('10,000-deep nesting gets a clear error, not a stack overflow', async (t) => {
  const flow = caught(() => parseYamlDocument(`a: ${'['.repeat(10_000)}${']'.repeat(10_000)}`, LIMITS))
  t.equal(flow.code, 'config.too_deep')
  t.match(flow.message, /more than 100 levels \(line 1, column \d+\)/)
  const mapped = caught(() => parseYamlDocument(`a: ${'{b: '.repeat(10_000)}1${'}'.repeat(10_000)}`, LIMITS))
  t.equal(mapped.code, 'config.too_deep', 'flow maps too')
  const block = Array.from({ length: 10_000 }, (_, i) => `${' '.repeat(i)}-`).join('\n')
  const blocky = caught(() => parseYamlDocument(block, { ...LIMITS, maxBytes: 100 * 1024 * 1024 }))
  t.equal(blocky.code, 'config.too_deep', 'block lists too')
  t.same(
    parseYamlDocument(`a: ${'['.repeat(99)}${']'.repeat(99)}`, LIMITS).value,
    { a: JSON.parse(`${'['.repeat(99)}${']'.repeat(99)}`) },
    'the cap itself is fine',
  )
})

t.test('aliases cannot nest past the depth cap', async (t) => {
  const lines = ['a0: &a0 1']
  for (let i = 1; i <= 5; i++)
    lines.push(`a${String(i)}: &a${String(i)} ${'['.repeat(60)}*a${String(i - 1)}${']'.repeat(60)}`)
  const e = caught(() => parseYamlDocument(lines.join('\n'), LIMITS))
  t.equal(e.code, 'config.too_deep')
  t.match(e.message, /once its aliases are expanded/)
})

t.test('plain values only: tags that would build Buffers, Sets or Dates are refused', async (t) => {
  for (const text of ['a: !!binary aGk=\n', 'a: !!set {x}\n', 'a: !!timestamp 2020-01-01\n', 'a: !custom x\n']) {
    const e = caught(() => parseYamlDocument(text, LIMITS))
    t.equal(e.code, 'config.invalid_yaml', text)
    t.match(e.message, /Unresolved tag: \S+: a document holds plain values.*\(line 1, column 4\)/)
  }
  t.same(parseYamlDocument('a: !!str 12\nb: !!int "7"\n', LIMITS).value, { a: '12', b: 7 }, 'the core tags are fine')
  const self = caught(() => parseYamlDocument('a: &a [*a]\n', LIMITS))
  t.equal(self.code, 'config.too_deep', 'an alias inside its own anchor')
})

t.test('the size cap is the CONFIG_MAX_BYTES setting', async (t) => {
  t.same(documentLimits({ CONFIG_MAX_BYTES: 2048 }), { maxBytes: 2048, maxAliasCount: 100, maxDepth: 100 })
})

t.test('JSON text: the same value and source map as through YAML, its problems still placed', async (t) => {
  const value = { apiVersion: 'platform/v1', spec: { agents: [{ name: 'a' }, { name: 'b', tags: ['x'], n: 1.5 }] } }
  const text = JSON.stringify(value, null, 2)
  const doc = parseYamlDocument(text, LIMITS)
  t.same(doc.value, value, 'the value JSON.parse gives')
  t.same(doc.positionOf('spec.agents[1].tags'), { line: 10, column: 9 }, 'a path placed in the text')
  t.match(doc.issueAt('spec.agents[0].model', 'required'), { line: 5, column: 7 }, 'an issue at its parent')
  const twice = caught(() => parseYamlDocument('{"spec": {"a": 1, "b": 2, "\\u0061": 3}}', LIMITS))
  t.equal(twice.code, 'config.invalid_yaml', 'a duplicate key (even escaped) is refused, not silently the last')
  t.match(twice.message, /duplicate key.*line 1, column/)
  const deep = caught(() => parseYamlDocument(`${'['.repeat(10_000)}${']'.repeat(10_000)}`, LIMITS))
  t.equal(deep.code, 'config.too_deep', '10,000-deep JSON is refused like YAML')
  const proto = parseYamlDocument('{"spec": {"__proto__": {"x": 1}}}', LIMITS)
  t.equal(Object.getPrototypeOf((proto.value as { spec: object }).spec), Object.prototype, 'no prototype set')
  t.same(caught(() => parseYamlDocument('{"a": 1', LIMITS)).code, 'config.invalid_yaml', 'not JSON: the YAML path')
})
