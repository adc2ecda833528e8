import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import {
  compileTemplate,
  MAX_SOURCE_BYTES,
  renderTemplate,
  TemplateError,
  templateCacheSize,
  type RenderOptions,
} from '../../src/templates/render.ts'

/*
 * The hardened template renderer (src/templates/render.ts): Jinja2-style rendering, strict
 * undefined, autoescape, an attack table of known nunjucks/SSTI payloads (each refused or
 * harmless, none reaching `process`), a proof in a child process that stock nunjucks runs those
 * payloads, and the size and time bounds.
 */

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
const SECRET = `tpl-secret-${randomBytes(8).toString('hex')}`
process.env.TPL_TEST_SECRET = SECRET
const G = globalThis as Record<string, unknown>

/** Renders and returns the output, or the TemplateError code ('!' + code). */
function outcome(source: string, variables: Record<string, unknown> = {}, o?: RenderOptions): string {
  try {
    return renderTemplate(source, variables, o)
  } catch (err) {
    if (err instanceof TemplateError) return `!${err.code}`
    throw err
  }
}

function caught(fn: () => unknown): TemplateError {
  try {
    fn()
  } catch (err) {
    if (err instanceof TemplateError) return err
    throw err
  }
  throw new Error('expected a TemplateError')
}

t.test('normal rendering', async (t) => {
  const r = (src: string, vars: Record<string, unknown> = {}): string => renderTemplate(src, vars)
  t.equal(r('Hello {{ name }}!', { name: 'Ann' }), 'Hello Ann!')
  t.equal(
    r('{{ user.profile.city }} {{ items[1] }} {{ user["profile"]["zip"] }}', {
      user: { profile: { city: 'Oslo', zip: 150 } },
      items: ['a', 'b'],
    }),
    'Oslo b 150',
  )
  t.equal(
    r('{{ n }} {{ f }} {{ yes }} {{ nothing }}|', { n: 42, f: 1.5, yes: true, nothing: null }),
    '42 1.5 true |',
    'null renders empty',
  )
  t.equal(
    r('{% for x in items %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}', {
      items: ['a', 'b', 'c'],
    }),
    '1a,2b,3c',
  )
  t.equal(r('{% for x in [] %}x{% else %}empty{% endfor %}'), 'empty')
  t.equal(r('{% for k, v in obj %}{{ k }}={{ v }};{% endfor %}', { obj: { a: 1, b: 2 } }), 'a=1;b=2;')
  t.equal(
    r('{% for a, b in pairs %}{{ a }}{{ b }} {% endfor %}', {
      pairs: [
        [1, 2],
        [3, 4],
      ],
    }),
    '12 34 ',
  )
  t.equal(r('{% for i in range(3) %}{{ i }}{% endfor %}|{% for i in range(1, 7, 2) %}{{ i }}{% endfor %}'), '012|135')
  t.equal(r('{% if n > 10 %}big{% elif n > 5 %}mid{% else %}small{% endif %}', { n: 7 }), 'mid')
  t.equal(r('{{ "yes" if ok else "no" }}', { ok: false }), 'no')
  t.equal(
    r('{{ 2 + 3 * 4 }} {{ 7 // 2 }} {{ 7 % 4 }} {{ 2 ** 8 }} {{ -n }} {{ 1 / 4 }}', { n: 3 }),
    '14 3 3 256 -3 0.25',
  )
  t.equal(r('{{ "a" ~ 1 ~ none }} {{ "x" + "y" }}'), 'a1 xy')
  t.equal(
    r('{{ 1 == 1 }} {{ "a" != "b" }} {{ 2 <= 1 }} {{ "b" in "abc" }} {{ 2 in [1, 2] }} {{ "k" in {"k": 1} }}'),
    'true true false true true true',
  )
  t.equal(
    r('{% set greeting = "hi" %}{% set block %}[{{ greeting }}]{% endset %}{{ block }}{{ greeting | upper }}'),
    '[hi]HI',
  )
  t.equal(
    r(
      '{% macro tag(name, cls="x") %}<{{ name }} class="{{ cls }}">{% endmacro %}{{ tag("p") }}{{ tag("a", cls="y") }}',
    ),
    '<p class="x"><a class="y">',
  )
  t.equal(r('{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}inside{% endcall %}'), '[inside]')
  t.equal(
    r('{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n }}*{{ fact(n - 1) }}{% endif %}{% endmacro %}{{ fact(4) }}'),
    '4*3*2*1',
    'recursion within the depth limit',
  )
  t.equal(r('{% switch x %}{% case 1 %}one{% case 2 %}two{% default %}other{% endswitch %}', { x: 2 }), 'two')
  t.equal(r('a {# comment #} b {%- if true %} c {%- endif %}'), 'a  b c')
  t.equal(r('{% raw %}{{ not rendered }}{% endraw %}'), '{{ not rendered }}')
  t.equal(r('{% filter upper %}shout {{ w }}{% endfilter %}', { w: 'it' }), 'SHOUT IT')
  t.equal(r('{% block main %}in a block {{ x }}{% endblock %}', { x: 1 }), 'in a block 1')
  t.equal(
    r(
      '{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ n is number }} {{ n is odd }} {{ n is divisibleby(3) }} {{ z is none }}',
      { x: 1, n: 9, z: null },
    ),
    'true false true true true true true',
  )
})

t.test('filters', async (t) => {
  const r = (src: string, vars: Record<string, unknown> = {}): string => renderTemplate(src, vars)
  t.equal(
    r('{{ s | upper }} {{ s | lower }} {{ s | title }} {{ s | capitalize }}', { s: 'hello wORLD' }),
    'HELLO WORLD hello world Hello World Hello world',
  )
  t.equal(
    r('{{ items | join(", ") }}|{{ items | join }}|{{ people | join("/", "name") }}', {
      items: ['a', 'b'],
      people: [{ name: 'x' }, { name: 'y' }],
    }),
    'a, b|ab|x/y',
  )
  t.equal(
    r(
      '{{ missing | default("dflt") }} {{ user.nick | default(user.name) }} {{ "" | default("e", true) }} {{ 0 | d(5) }}',
      { user: { name: 'Ann' } },
    ),
    'dflt Ann e 0',
  )
  t.equal(
    r('{{ items | length }} {{ "abc" | length }} {{ obj | length }} {{ items | count }}', {
      items: [1, 2, 3],
      obj: { a: 1 },
    }),
    '3 3 1 3',
  )
  t.equal(r('{{ d | dump }}', { d: { a: [1, 'x', null], b: true } }), '{"a":[1,"x",null],"b":true}')
  t.equal(r('{{ d | dump(2) }}', { d: { a: [1] } }), JSON.stringify({ a: [1] }, null, 2))
  t.equal(r('{{ d | tojson }}', { d: { html: '<b>&</b>' } }), '{"html":"\\u003cb\\u003e\\u0026\\u003c/b\\u003e"}')
  t.equal(
    r(
      '{{ " x " | trim }}|{{ "a-b-a" | replace("a", "o") }}|{{ "aaa" | replace("a", "b", 2) }}|{{ "ab" | replace("", "-") }}',
    ),
    'x|o-b-o|bba|-a-b-',
  )
  t.equal(
    r(
      '{{ items | first }} {{ items | last }} {{ items | reverse | join }} {{ items | sort | join }} {{ items | sort(true) | join }}',
      { items: [2, 3, 1] },
    ),
    '2 1 132 123 321',
  )
  t.equal(
    r('{{ people | sort(false, false, "age") | join(",", "name") }}', {
      people: [
        { name: 'b', age: 30 },
        { name: 'a', age: 20 },
      ],
    }),
    'a,b',
  )
  t.equal(
    r(
      '{{ "3.7" | float }} {{ "42x" | int }} {{ "x" | int }} {{ 3.14159 | round(2) }} {{ 2.1 | round(0, "ceil") }} {{ -4 | abs }}',
    ),
    '3.7 42 0 3.14 3 4',
  )
  t.equal(
    r('{{ items | sum }} {{ people | sum("age") }}', { items: [1, 2, 3], people: [{ age: 1 }, { age: 2 }] }),
    '6 3',
  )
  t.equal(
    r(
      '{{ "hello world foo" | truncate(9) }} {{ "a b c" | wordcount }} {{ "a b&c" | urlencode }} {{ {"q": "a b", "n": 1} | urlencode }}',
    ),
    'hello... 3 a%20b%26c q=a%20b&n=1',
  )
  t.equal(r('{{ "<p>Hello <b>there</b></p>" | striptags }}|{{ "a<b" | striptags }}'), 'Hello there|a<b')
  t.equal(r('{{ "x" | center(5) }}|{{ "a\nb" | indent(2) }}|{{ "a\nb" | nl2br }}'), '  x  |a\n  b|a<br />\nb')
  t.equal(
    r('{{ users | selectattr("active") | join(",", "n") }} {{ users | rejectattr("active") | join(",", "n") }}', {
      users: [
        { n: 'a', active: true },
        { n: 'b', active: false },
      ],
    }),
    'a b',
  )
  t.equal(r('{{ {"b": 2, "a": 1} | dictsort | dump }} {{ "ab" | list | join("|") }}'), '[["a",1],["b",2]] a|b')
})

t.test('strict undefined: a missing variable or attribute throws, naming it', async (t) => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['{{ missing }}', {}, 'missing'],
    ['{{ user.name }}', { user: {} }, 'user.name'],
    ['{{ user.address.city }}', { user: { address: {} } }, 'user.address.city'],
    ['{{ user.address.city }}', { user: {} }, 'user.address'],
    ['{{ ghost.address.city }}', {}, 'ghost'],
    ['{{ user.name }}', { user: null }, 'user.name'],
    ['{{ items[5] }}', { items: [1] }, 'items[5]'],
    ['{{ cfg["a-b"] }}', { cfg: {} }, 'cfg["a-b"]'],
    ['{% if flag %}x{% endif %}', {}, 'flag'],
    ['{% if user.admin %}x{% endif %}', { user: {} }, 'user.admin'],
    ['{% for x in items %}{% endfor %}', {}, 'items'],
    ['{{ missing | upper }}', {}, 'missing'],
    ['{{ "x" | replace(missing, "y") }}', {}, 'missing'],
    ['{{ range(count) }}', {}, 'count'],
    ['{{ a ~ b }}', { a: 1 }, 'b'],
    ['{% macro m(p) %}{{ p }}{% endmacro %}{{ m() }}', {}, 'p'],
    ['{% if false %}{% set later = 1 %}{% endif %}{{ later }}', {}, 'later'],
    ['{{ n.toString }}', { n: 5 }, 'n.toString'],
    ['{{ obj.hasOwnProperty }}', { obj: {} }, 'obj.hasOwnProperty'],
    ['{{ toString }}', {}, 'toString'],
    ['{{ cycler }} ', {}, 'cycler'],
    ['{{ joiner }} ', {}, 'joiner'],
  ]
  for (const [src, vars, variable] of cases) {
    const err = caught(() => renderTemplate(src, vars))
    t.equal(err.code, 'template.undefined_variable', src)
    t.equal(err.variable, variable, `${src} names ${variable}`)
  }
  const err = caught(() => renderTemplate('line one\n  {{ user.name }}', { user: {} }))
  t.equal(err.line, 2)
  t.equal(err.column, 10, 'the column of the failing attribute access')
  t.match(err.message, /'user\.name' is undefined \(line 2, column 10\)/)
  t.equal(err.status, 422)

  // The lenient spots: `is defined`, `default`.
  t.equal(
    renderTemplate('{{ a.b.c is defined }} {{ a.b.c | default("-") }} {% if a is defined and a.b %}x{% endif %}', {}),
    'false - ',
  )
})

t.test('autoescape only when asked', async (t) => {
  const vars = { x: `<a href='u'>&"` }
  t.equal(renderTemplate('{{ x }}', vars), `<a href='u'>&"`, 'plain text by default')
  t.equal(renderTemplate('{{ x }}', vars, { autoescape: true }), '&lt;a href=&#39;u&#39;&gt;&amp;&quot;')
  t.equal(
    renderTemplate('<p>{{ x | safe }}</p>', vars, { autoescape: true }),
    `<p><a href='u'>&"</p>`,
    'literal template text and |safe are not escaped',
  )
  t.equal(
    renderTemplate('{{ x | escape }}', vars),
    '&lt;a href=&#39;u&#39;&gt;&amp;&quot;',
    '|escape works without autoescape',
  )
  t.equal(
    renderTemplate('{{ x | e }}', vars, { autoescape: true }),
    '&lt;a href=&#39;u&#39;&gt;&amp;&quot;',
    'no double escaping',
  )
  t.equal(
    renderTemplate('{% macro b(v) %}<b>{{ v }}</b>{% endmacro %}{{ b(x) }}', vars, { autoescape: true }),
    '<b>&lt;a href=&#39;u&#39;&gt;&amp;&quot;</b>',
    'macro output is not re-escaped',
  )
  t.equal(renderTemplate('{{ x | upper }}', vars, { autoescape: true }), '&lt;A HREF=&#39;U&#39;&gt;&amp;&quot;')
})

/*
 * Known payloads. Sources: PayloadsAllTheThings / disse.cting.org ("sandbox break-out nunjucks"),
 * mozilla/nunjucks#338 and #1048, the Jinja2 classics, and the compiler-level injections found
 * while building this module (names pasted raw into generated JS by nunjucks 3.2.4).
 * `plain: true` marks payloads proven below (in a child process) to run code in stock nunjucks.
 * `stage` says which layer of ours stops them: 'validate' (at compile time) or 'runtime'.
 */
const SIDE = 'globalThis.__pwned = process.env.TPL_TEST_SECRET'
interface Payload {
  name: string
  src: string
  plain?: boolean
  stage: 'validate' | 'runtime' | 'harmless'
}
const PAYLOADS: Payload[] = [
  // As published; `process.mainModule` is unset under `node -e`, so the child proof uses the next one.
  {
    name: 'range.constructor RCE (PayloadsAllTheThings)',
    src: `{{ range.constructor("return global.process.mainModule.require('child_process').execSync('id').toString()")() }}`,
    stage: 'validate',
  },
  {
    name: 'range.constructor RCE via getBuiltinModule',
    src: `{{ range.constructor("return process.getBuiltinModule('child_process').execSync('id').toString()")() }}`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'range.constructor side effect',
    src: `{{ range.constructor("${SIDE}")() }}`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'range.constructor returns process.env',
    src: '{{ range.constructor("return process.env.TPL_TEST_SECRET")() }}',
    plain: true,
    stage: 'validate',
  },
  { name: 'cycler.constructor', src: `{{ cycler.constructor("${SIDE}")() }}`, plain: true, stage: 'validate' },
  { name: 'joiner.constructor', src: `{{ joiner.constructor("${SIDE}")() }}`, plain: true, stage: 'validate' },
  {
    name: "''.constructor.constructor('return this')",
    src: `{{ ''.constructor.constructor("${SIDE}; return this")() }}`,
    plain: true,
    stage: 'validate',
  },
  {
    name: '[].constructor.constructor',
    src: `{{ [].constructor.constructor("${SIDE}")() }}`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'bare constructor.constructor',
    src: `{{ constructor.constructor("${SIDE}")() }}`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'this.constructor.constructor (#1048)',
    src: `{{ this.constructor.constructor("${SIDE}")() }}`,
    stage: 'validate',
  },
  {
    name: 'a.constructor.__proto__.constructor (#338)',
    src: `{{ a.constructor.__proto__.constructor("${SIDE}")() }}`,
    plain: true,
    stage: 'validate',
  },
  { name: '[].map.constructor', src: `{{ [].map.constructor("${SIDE}")() }}`, plain: true, stage: 'validate' },
  {
    name: "foo['constructor'] chain",
    src: `{{ foo['constructor']['constructor']("${SIDE}")() }}`,
    plain: true,
    stage: 'validate',
  },
  { name: '(x).__proto__', src: '{{ (x).__proto__ }}', stage: 'validate' },
  {
    name: '{% set f = x.constructor %}',
    src: `{% set f = x.constructor %}{% set g = f.constructor %}{{ g("${SIDE}")() }}`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'computed "constr" ~ "uctor" key',
    src: `{% set k = "constr" ~ "uctor" %}{% set f = range[k] %}{% set g = f[k] %}{{ g("${SIDE}") }}`,
    stage: 'runtime',
  },
  {
    name: 'computed key, called in plain nunjucks',
    src: `{% set k = "constr" ~ "uctor" %}{% set f = range[k] %}{{ f("${SIDE}")() }}`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'list used as a key (JS coerces to "constructor")',
    src: `{% set f = range[["constructor"]] %}{% set g = f[["constructor"]] %}{{ g("${SIDE}") }}`,
    stage: 'runtime',
  },
  { name: 'computed __proto__', src: '{% set k = "__pro" ~ "to__" %}{{ x[k] }}', stage: 'runtime' },
  {
    name: 'macro["constructor"] computed',
    src: `{% macro m() %}x{% endmacro %}{% set k = "constr" ~ "uctor" %}{% set f = m[k] %}{{ f("${SIDE}") }}`,
    stage: 'runtime',
  },
  {
    name: 'macro.constructor called',
    src: `{% macro m() %}x{% endmacro %}{{ m.constructor("${SIDE}")() }}`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'macro own .caller (sloppy function property)',
    src: '{% macro m() %}{% set k = "cal" ~ "ler" %}{{ m[k] }}{% endmacro %}{{ m() }}',
    stage: 'runtime',
  },
  {
    name: 'macro .prototype',
    src: '{% macro m() %}x{% endmacro %}{% set k = "proto" ~ "type" %}{{ m[k] }}',
    stage: 'runtime',
  },
  {
    name: 'caller.constructor in a call block',
    src: `{% macro m() %}{% set k = "constr" ~ "uctor" %}{% set c = caller[k] %}{% set f = c[k] %}{{ f("${SIDE}") }}{% endmacro %}{% call m() %}x{% endcall %}`,
    stage: 'runtime',
  },
  {
    name: 'caller chain in plain nunjucks',
    src: `{% macro m() %}{{ caller.constructor("${SIDE}")() }}{% endmacro %}{% call m() %}x{% endcall %}`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'loop.constructor',
    src: `{% for i in [1] %}{% set k = "constr" ~ "uctor" %}{% set c = loop[k] %}{% set f = c[k] %}{{ f("${SIDE}") }}{% endfor %}`,
    stage: 'runtime',
  },
  {
    name: 'range(1).constructor',
    src: `{% set k = "constr" ~ "uctor" %}{% set c = range(1)[k] %}{% set f = c[k] %}{{ f("${SIDE}") }}`,
    stage: 'runtime',
  },
  { name: "'a'.toString (string method)", src: "{{ 'a'.toString }}", stage: 'runtime' },
  { name: '"abc".toUpperCase() (string method call)', src: '{{ "abc".toUpperCase() }}', stage: 'validate' },
  { name: 'items.push / array method call', src: '{{ items.push(1) }}', stage: 'validate' },
  { name: 'x|attr("constructor") (Jinja attr filter)', src: '{{ x | attr("constructor") }}', stage: 'validate' },
  { name: 'filter named constructor', src: `{{ "${SIDE}" | constructor }}`, stage: 'validate' },
  { name: '{% filter constructor %}', src: '{% filter constructor %}x{% endfilter %}', stage: 'validate' },
  { name: 'test named constructor', src: '{{ "x" is constructor }}', stage: 'validate' },
  { name: 'test named __defineGetter__', src: '{{ "x" is __defineGetter__ }}', stage: 'validate' },
  {
    name: 'sort by attribute constructor.constructor',
    src: '{{ [x] | sort(false, false, "constructor.constructor") }}',
    stage: 'runtime',
  },
  { name: 'join by attribute __proto__', src: '{{ [x] | join(",", "__proto__") }}', stage: 'runtime' },
  {
    name: 'dict literal with a __proto__ key',
    src: '{% set d = { "__proto__": { "polluted": 1 } } %}{{ d.polluted }}',
    stage: 'validate',
  },
  { name: 'x.__lookupGetter__', src: '{{ x.__lookupGetter__("a") }}', stage: 'validate' },
  { name: 'Jinja lipsum.__globals__', src: '{{ lipsum.__globals__.os.popen("id").read() }}', stage: 'validate' },
  { name: 'Jinja "".__class__.__mro__', src: '{{ "".__class__.__mro__[1].__subclasses__() }}', stage: 'validate' },
  { name: 'Jinja self / config', src: '{{ self }}{{ config }}', stage: 'runtime' },
  {
    name: 'global / process / require names',
    src: '{{ process }}{{ require }}{{ global }}{{ globalThis }}',
    stage: 'runtime',
  },
  {
    name: 'compiler injection: {% set "<js>" = 1 %}',
    src: `{% set "x\\", ${SIDE}, \\"" = 1 %}ok`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'compiler injection: {% macro "<js>"() %}',
    src: `{% macro "x\\", ${SIDE}, \\"" () %}{% endmacro %}ok`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'compiler injection: macro keyword parameter "<js>"=1',
    src: `{% macro m("x\\", ${SIDE}, \\"" = 1) %}{% endmacro %}ok`,
    plain: true,
    stage: 'validate',
  },
  {
    name: 'compiler injection: for k, "<js>" in dict',
    src: `{% for a, "x\\", ${SIDE}, \\"" in { "k": 1 } %}{% endfor %}ok`,
    plain: true,
    stage: 'validate',
  },
  { name: 'compiler injection: quote inside a name', src: '{{ a";globalThis;" }}', stage: 'validate' },
  {
    name: 'regex literal (ReDoS; hangs stock nunjucks)',
    src: '{{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!" | replace(r/^(a+)+$/, "x") }}',
    stage: 'validate',
  },
  { name: '{% include "/etc/passwd" %}', src: '{% include "/etc/passwd" %}', stage: 'validate' },
  { name: '{% import %}', src: '{% import "/etc/passwd" as p %}', stage: 'validate' },
  { name: '{% extends %}', src: '{% extends "/etc/passwd" %}', stage: 'validate' },
  { name: '{% from ... import %}', src: '{% from "/etc/passwd" import x %}', stage: 'validate' },
  { name: 'printing a macro (its compiled source)', src: '{% macro m() %}x{% endmacro %}{{ m }}', stage: 'runtime' },
  {
    name: 'macro stored in a dict, then coerced by ~',
    src: '{% macro m() %}x{% endmacro %}{% set d = {"toString": m} %}{{ d ~ "" }}',
    stage: 'harmless',
  },
]

t.test(`attack table: ${PAYLOADS.length} payloads are refused or harmless`, async (t) => {
  t.ok(PAYLOADS.length >= 25)
  const vars = { x: {}, a: {}, foo: {}, items: [1] }
  delete G['__pwned']
  for (const p of PAYLOADS) {
    let output: string | undefined
    let code: string | undefined
    try {
      output = renderTemplate(p.src, vars)
    } catch (err) {
      t.ok(err instanceof TemplateError, `${p.name}: only TemplateErrors escape`)
      code = (err as TemplateError).code
    }
    if (p.stage === 'harmless') {
      t.type(output, 'string', `${p.name}: renders`)
    } else {
      t.ok(
        code === 'template.forbidden' || code === 'template.undefined_variable',
        `${p.name}: refused (${code ?? `rendered ${JSON.stringify(output)}`})`,
      )
      if (p.stage === 'validate') {
        // Refused before any code runs: compileTemplate alone throws.
        t.throws(() => compileTemplate(p.src), TemplateError, `${p.name}: refused at compile time`)
      } else {
        t.doesNotThrow(() => compileTemplate(p.src), `${p.name}: compiles, refused by the runtime`)
      }
    }
    if (output !== undefined) {
      t.notMatch(output, SECRET, `${p.name}: no secret in output`)
      t.notMatch(output, /uid=\d+|\[native code\]|function|process|=>/, `${p.name}: no code or process data in output`)
    }
    t.equal(G['__pwned'], undefined, `${p.name}: no side effect on globalThis`)
  }
})

t.test('stock nunjucks IS vulnerable to the table (proof run in a child process)', async (t) => {
  const plain = PAYLOADS.filter((p) => p.plain === true)
  t.ok(plain.length >= 10)
  const child = `
    const nunjucks = require('nunjucks')
    const payloads = JSON.parse(process.env.PAYLOADS)
    const results = payloads.map((src) => {
      delete globalThis.__pwned
      let out = ''
      try { out = String(new nunjucks.Environment(null, { autoescape: false }).renderString(src, { x: {}, a: {}, foo: {} })) } catch (e) { out = 'error: ' + e.message }
      return { ran: globalThis.__pwned === process.env.TPL_TEST_SECRET || out.includes(process.env.TPL_TEST_SECRET) || /uid=\\d+/.test(out) }
    })
    process.stdout.write(JSON.stringify(results))
  `
  const stdout = execFileSync(process.execPath, ['-e', child], {
    cwd: repoRoot,
    env: { ...process.env, PAYLOADS: JSON.stringify(plain.map((p) => p.src)) },
    encoding: 'utf8',
    timeout: 30_000,
  })
  const results = JSON.parse(stdout) as { ran: boolean }[]
  plain.forEach((p, i) => t.ok(results[i]?.ran, `stock nunjucks runs attacker code: ${p.name}`))
  t.equal(G['__pwned'], undefined, 'this process stayed clean')
})

t.test('variables are data: no live objects, no inherited properties', async (t) => {
  // Functions, getters and class instances do not survive the JSON copy.
  let getterCalls = 0
  const vars = {
    fn: () => 'called',
    obj: Object.defineProperty({ plain: 1 }, 'g', { enumerable: true, get: () => ++getterCalls }),
    date: new Date(0),
  }
  t.equal(outcome('{{ fn }}', vars), '!template.undefined_variable')
  t.equal(outcome('{{ obj.plain }} {{ date }}', vars), '1 1970-01-01T00:00:00.000Z')
  const before = getterCalls
  t.equal(outcome('{{ obj.g }}{{ obj.g }}{{ obj.g }}', vars), `${before + 1}${before + 1}${before + 1}`)
  t.equal(getterCalls, before + 1, 'the getter ran once, when the variables were copied, never from the template')
  // A `__proto__` key in variables is an own key, not a prototype (nunjucks#1331).
  const polluted = JSON.parse('{"__proto__": {"content": "pwned"}, "x": 1}') as Record<string, unknown>
  t.equal(outcome('{{ content }}', polluted), '!template.undefined_variable')
  t.equal(outcome('{{ x.content }}', polluted), '!template.undefined_variable')
  // Even a polluted Object.prototype in this process is invisible to templates (own lookups only).
  const proto = Object.prototype as Record<string, unknown>
  proto['pollutedForTemplateTest'] = 'leak'
  try {
    t.equal(outcome('{{ pollutedForTemplateTest }}', {}), '!template.undefined_variable')
    t.equal(outcome('{{ o.pollutedForTemplateTest }}', { o: {} }), '!template.undefined_variable')
    t.equal(outcome('{% for k, v in o %}{{ k }};{% endfor %}', { o: { a: 1 } }), 'a;')
    t.equal(outcome('{{ "pollutedForTemplateTest" in o }}', { o: {} }), 'false')
  } finally {
    delete proto['pollutedForTemplateTest']
  }
  t.equal(
    outcome('{{ x }}', { x: 10n } as unknown as Record<string, unknown>),
    '!template.render',
    'non-JSON variables are refused',
  )
})

t.test('other nunjucks environments in the process are not affected', async (t) => {
  const nunjucks = createRequire(import.meta.url)('nunjucks') as {
    Environment: new (loaders: null, opts: object) => { renderString(src: string, ctx: object): string }
    runtime: Record<string, unknown>
  }
  renderTemplate('{{ x }}', { x: 1 })
  const env = new nunjucks.Environment(null, { autoescape: false })
  t.equal(
    env.renderString('{{ "abc".toUpperCase() }} {{ range(3) | join(",") }} {{ missing }}', {}),
    'ABC 0,1,2 ',
    'stock behaviour intact (method calls, range, lenient undefined)',
  )
  t.equal(nunjucks.runtime['memberLookup'], createRequire(import.meta.url)('nunjucks/src/runtime.js').memberLookup)
  t.notOk(String(nunjucks.runtime['memberLookup']).includes('forbidden'), 'runtime.memberLookup is the stock function')
})

t.test('syntax errors carry line and column', async (t) => {
  for (const src of ['{{ x', '{% if %}', '{% for x %}{% endfor %}', 'a\n{% endif %}', '{{ x | }}']) {
    const err = caught(() => renderTemplate(src, { x: 1 }))
    t.equal(err.code, 'template.syntax', src)
    t.type(err.line, 'number', `${src}: line`)
  }
  const err = caught(() => renderTemplate('ok\nok {% if x %}', { x: 1 }))
  t.equal(err.line, 2, 'running out of input points at the end of the source')
  t.match(err.message, /line 2, column 14/)
})

t.test('size limits', async (t) => {
  // Template source.
  t.equal(outcome('x'.repeat(MAX_SOURCE_BYTES + 1)), '!template.too_large')
  t.equal(outcome('é'.repeat(MAX_SOURCE_BYTES / 2 + 1)), '!template.too_large', 'source limit counts UTF-8 bytes')
  t.equal(outcome('x'.repeat(MAX_SOURCE_BYTES)).length, MAX_SOURCE_BYTES)
  // Output, default 256 KiB and configurable; UTF-8 bytes.
  t.equal(outcome('{% for i in range(30000) %}0123456789{% endfor %}'), '!template.too_large')
  t.equal(outcome('{% for i in range(20000) %}0123456789{% endfor %}').length, 200_000)
  t.equal(outcome('{{ s }}', { s: 'x'.repeat(100) }, { maxOutputBytes: 50 }), '!template.too_large')
  t.equal(outcome('{{ s }}', { s: 'é'.repeat(40) }, { maxOutputBytes: 50 }), '!template.too_large', '80 bytes > 50')
  t.equal(outcome('{{ s }}', { s: 'é'.repeat(25) }, { maxOutputBytes: 50 }), 'é'.repeat(25))
  t.equal(
    outcome('{% macro m() %}{% for i in range(50000) %}0123456789{% endfor %}{% endmacro %}{% set x = m() %}ok'),
    '!template.too_large',
    'macro buffers are bounded too',
  )
  t.equal(
    outcome('{% set c %}{% for i in range(50000) %}0123456789{% endfor %}{% endset %}ok'),
    '!template.too_large',
    'captures are bounded too',
  )
  // Values built by the template.
  const started = performance.now()
  t.equal(
    outcome('{% set s = "ab" %}{% for i in range(64) %}{% set s = s ~ s %}{% endfor %}{{ s | length }}'),
    '!template.too_large',
    'string doubling',
  )
  t.equal(
    outcome('{% set a = [1] %}{% for i in range(64) %}{% set a = [a, a] %}{% endfor %}{{ a | length }}'),
    '!template.too_large',
    'shared-subtree doubling',
  )
  t.equal(
    outcome('{% set d = {} %}{% for i in range(64) %}{% set d = {"l": d, "r": d} %}{% endfor %}ok'),
    '!template.too_large',
    'dict doubling',
  )
  t.equal(outcome('{{ range(1000000000) | length }}'), '!template.too_large', 'range is capped')
  t.equal(
    outcome('{{ s | replace("", s) | length }}', { s: 'x'.repeat(2000) }),
    '!template.too_large',
    'replace blow-up checked before building',
  )
  t.equal(outcome('{{ "x" | center(1000000000) }}'), '!template.too_large')
  t.equal(outcome('{{ "a\nb" | indent(1000000000) }}'), '!template.too_large')
  t.equal(
    outcome('{% set a = [] %}{% for i in range(2000) %}{% set a = [a] %}{% endfor %}{{ a | dump }}'),
    '!template.too_large',
    'deep nesting',
  )
  t.equal(
    outcome('{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}'),
    '!template.too_large',
    'unbounded macro recursion',
  )
  t.equal(outcome(`{{ ${'('.repeat(15000)}1${')'.repeat(15000)} }}`), '!template.too_large', 'deeply nested source')
  t.equal(
    outcome('{% set a = x %}{% for i in range(250) %}{% set a = [a] %}{% endfor %}{{ a | dump(10) }}', {
      x: Array.from({ length: 20000 }, (_, i) => i),
    }),
    '!template.too_large',
    'dump counts its indentation',
  )
  t.ok(performance.now() - started < 2000, 'each limit trips quickly')
})

t.test('time limit', async (t) => {
  const loops: [string, string][] = [
    ['nested loops, no output', '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}'],
    [
      'nested loops with set',
      '{% for i in range(100000) %}{% for j in range(100000) %}{% set x = i %}{% endfor %}{% endfor %}',
    ],
    [
      'macro called in a loop',
      '{% macro f() %}{% for i in range(100000) %}{% endfor %}{% endmacro %}{% for i in range(100000) %}{% set y = f() %}{% endfor %}',
    ],
    [
      'sorting and joining in a loop',
      '{% set r = range(50000) %}{% for i in range(100000) %}{% set y = r | sort(true) | join %}{% endfor %}',
    ],
    [
      'recursive macro fan-out',
      '{% macro f(n) %}{% if n < 40 %}{% set a = f(n + 1) %}{% set b = f(n + 1) %}{% endif %}{% endmacro %}{{ f(0) }}',
    ],
  ]
  for (const [name, src] of loops) {
    const started = performance.now()
    t.equal(outcome(src, {}, { timeoutMs: 200 }), '!template.timeout', name)
    const elapsed = performance.now() - started
    t.ok(elapsed < 200 + 300, `${name}: stopped after ${elapsed.toFixed(0)} ms (limit 200 ms)`)
  }
  const started = performance.now()
  t.equal(outcome(loops[0]?.[1] ?? ''), '!template.timeout', 'default limit')
  const elapsed = performance.now() - started
  t.ok(elapsed >= 950 && elapsed < 1500, `default 1 s limit (${elapsed.toFixed(0)} ms)`)
})

t.test('compileTemplate: compiled once, reusable, bounded cache', async (t) => {
  const render = compileTemplate('Hi {{ who }}', { autoescape: true })
  t.equal(render({ who: '<x>' }), 'Hi &lt;x&gt;')
  t.equal(render({ who: 'y' }), 'Hi y')
  t.throws(() => compileTemplate('{{ x.constructor }}'), TemplateError, 'refused at compile time')
  t.throws(() => compileTemplate('x', { maxOutputBytes: 0 }), RangeError)
  t.throws(() => compileTemplate('x', { timeoutMs: -1 }), RangeError)
  for (let i = 0; i < 300; i++) compileTemplate(`cache test ${i} {{ x }}`)
  t.ok(templateCacheSize() <= 256, `cache size ${templateCacheSize()}`)
})
