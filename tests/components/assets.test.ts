import { createRequire } from 'node:module'
import t from 'tap'
import { REACT_VERSION } from '../../src/components/assets.ts'
import { renderPage } from '../../src/components/page.ts'
import { loadConfig } from '../../src/kernel/config.ts'
import { loadComponentAssets } from '../../src/components/gateway-assets.ts'

/* The page's library paths name the installed React; COMPONENT_UI_CDN moves React to a CDN. */
const require = createRequire(import.meta.url)
const base = {
  NODE_ENV: 'test',
  SECRET_KEY: 'k'.repeat(40),
  ENCRYPTION_KEY: 'e'.repeat(40),
  DATA_DIR: '/nonexistent',
  SUPERADMIN_EMAIL: 'a@b.c',
}
const page = {
  title: 't',
  bundle: 'var PlatformComponent={}',
  css: '',
  component: { namespace: 'n', name: 'c', title: '' },
  input: {},
  ticket: null,
  mode: 'user' as const,
}

t.test('REACT_VERSION is the installed react and react-dom; every asset loads', async (t) => {
  for (const pkg of ['react', 'react-dom'])
    t.equal((require(`${pkg}/package.json`) as { version: string }).version, REACT_VERSION, pkg)
  const assets = loadComponentAssets()
  t.equal(assets.size, 3)
  for (const [path, a] of assets) t.ok(a.body.length > 1000, `${path} is there`)
})

t.test('React comes from the platform by default, from COMPONENT_UI_CDN when set', async (t) => {
  const local = renderPage(loadConfig(base), page).html.toString('utf8')
  t.match(local, `src="/components/assets/react@${REACT_VERSION}/umd/react.production.min.js"`)
  const cdn = renderPage(loadConfig({ ...base, COMPONENT_UI_CDN: 'https://unpkg.com/' }), page)
  const cdnHtml = cdn.html.toString('utf8')
  t.match(cdnHtml, `src="https://unpkg.com/react@${REACT_VERSION}/umd/react.production.min.js"`)
  t.match(
    cdnHtml,
    'src="/components/assets/platform-ui@1.1.0/platform-ui.js"',
    "platform-ui is always the platform's own",
  )
  t.match(cdn.headers['content-security-policy'], /frame-ancestors \*/)
  const framed = renderPage(loadConfig({ ...base, COMPONENT_FRAME_ANCESTORS: "'self'" }), page)
  t.match(framed.headers['content-security-policy'], /frame-ancestors 'self'/, 'COMPONENT_FRAME_ANCESTORS applies')
})
