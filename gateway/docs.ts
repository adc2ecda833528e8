import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'

/*
 * Interactive API pages (Swagger UI) served from the installed swagger-ui-dist package: no CDN, so
 * docs work on a machine without internet access. Assets are read once at start.
 */
const require = createRequire(import.meta.url)

export const DOCS_ASSET_PREFIX = '/docs/assets/'

export function loadDocsAssets(): Map<string, { body: Buffer; type: string }> {
  const dir = join(require.resolve('swagger-ui-dist/package.json'), '..')
  const files: [string, string][] = [
    ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
    ['swagger-ui.css', 'text/css; charset=utf-8'],
  ]
  return new Map(files.map(([name, type]) => [name, { body: readFileSync(join(dir, name)), type }]))
}

export function docsPage(title: string, specUrl: string): string {
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${String(c.charCodeAt(0))};`)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<link rel="stylesheet" href="${DOCS_ASSET_PREFIX}swagger-ui.css">
</head>
<body>
<div id="ui"></div>
<script src="${DOCS_ASSET_PREFIX}swagger-ui-bundle.js"></script>
<script src="${DOCS_ASSET_PREFIX}init.js" data-spec="${esc(specUrl)}"></script>
</body>
</html>`
}

/**
 * Kept out of the page so a strict Content-Security-Policy (no inline scripts) holds.
 * `persistAuthorization` stays off: it would keep the bearer token in this origin's localStorage,
 * where any script on the origin could read it; a reload asks for the token again instead.
 */
export const DOCS_INIT_JS = `(function(){var s=document.currentScript.getAttribute('data-spec');window.ui=SwaggerUIBundle({url:s,dom_id:'#ui',deepLinking:true,persistAuthorization:false});})();`
