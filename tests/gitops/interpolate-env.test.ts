import t from 'tap'
import { interpolateEnv } from '../../src/gitops/interpolate-env.ts'
import { parseYamlDocument } from '../../src/gitops/parse-document.ts'
import { caught, LIMITS } from './caught.ts'

/* `${VAR}` in a config's values, from the environment. */

const text = `spec:
  llmProviders:
    - name: openai
      api_key: \${OPENAI_KEY}
      base_url: "https://\${HOST}:\${PORT}/v1"
  templates:
    - name: t
      content: "Hello $\${NAME}, cost $5"
`

t.test('present variables are replaced, in values only', async (t) => {
  const doc = parseYamlDocument(text, LIMITS)
  t.same(interpolateEnv(doc, { OPENAI_KEY: 'sk-1', HOST: 'llm.example.com', PORT: '8443' }), {
    spec: {
      llmProviders: [{ name: 'openai', api_key: 'sk-1', base_url: 'https://llm.example.com:8443/v1' }],
      templates: [{ name: 't', content: 'Hello ${NAME}, cost $5' }],
    },
  })
  const keyed = parseYamlDocument('${KEY}: ${VALUE}\nn: 3\nb: true\n', LIMITS)
  t.same(
    interpolateEnv(keyed, { KEY: 'k', VALUE: '42' }),
    { '${KEY}': '42', n: 3, b: true },
    'keys stay; values become text',
  )
  t.same(doc.value, parseYamlDocument(text, LIMITS).value, 'the parsed value is left as it was')
})

t.test('$${VAR} escapes to the literal ${VAR}, set or not', async (t) => {
  const doc = parseYamlDocument('a: $${HOME} and $$${X}\n', LIMITS)
  t.same(interpolateEnv(doc, { HOME: '/root', X: 'x' }), { a: '${HOME} and $${X}' })
})

t.test('a missing variable is named with path, line and column', async (t) => {
  const doc = parseYamlDocument(text, LIMITS)
  const e = caught(() => interpolateEnv(doc, { HOST: 'h' }))
  t.equal(e.code, 'config.missing_variable')
  t.equal(e.status, 422)
  t.equal(
    e.message,
    'environment variables not set: OPENAI_KEY, PORT (first at spec.llmProviders[0].api_key, line 4, column 7)',
  )
  t.same(e.issues, [
    {
      path: 'spec.llmProviders[0].api_key',
      message: 'the environment variable OPENAI_KEY is not set (line 4, column 7)',
      line: 4,
      column: 7,
    },
    {
      path: 'spec.llmProviders[0].base_url',
      message: 'the environment variable PORT is not set (line 5, column 7)',
      line: 5,
      column: 7,
    },
  ])
  const empty = interpolateEnv(parseYamlDocument('a: "${EMPTY}"\n', LIMITS), { EMPTY: '' })
  t.same(empty, { a: '' }, 'set to empty is set')
})
