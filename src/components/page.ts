import { pooledRandomBytes } from '../kernel/pooled-random.ts'
import type { Config } from '../kernel/config.ts'
import {
  COMPONENT_ASSET_PREFIX,
  PLATFORM_UI_ASSET,
  PLATFORM_UI_VERSION,
  REACT_ASSET,
  REACT_DOM_ASSET,
} from './assets.ts'

/*
 * The HTML page of a rendered component. Everything the page runs carries a fresh nonce, and the
 * Content-Security-Policy allows nothing else: no inline handlers, no eval, no other origin to
 * connect to, no plugins, no <base>. The bundle is inline (it was escaped for that when
 * compiled), the configuration is inert JSON (`<` escaped), the CSS cannot close its element.
 * The page holds the view ticket for its proxy calls and never a platform token.
 *
 * `sandbox allow-scripts` puts the page in an opaque origin: the bundle is user code on the
 * platform's own host, and without the sandbox it could read whatever else this origin keeps in
 * localStorage/sessionStorage/cookies (a token a docs page or console stored there). From the
 * opaque origin the proxy calls are cross-origin (`Origin: null`); the gateway's CORS allows that
 * for the ticket-authenticated /components/view/ routes only (gateway/cors.ts).
 */
export interface PageInput {
  title: string
  bundle: string
  css: string
  component: { namespace: string; name: string; title: string }
  input: Record<string, unknown>
  ticket: string | null
  mode: 'user' | 'share'
  /** The page of an embedded component (a nested frame of another component's page). */
  embedded?: boolean
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${String(c.charCodeAt(0))};`)
/** JSON inside <script type="application/json">: no `<` (so no `</script`), no line separators. */
const inertJson = (v: unknown): string =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029')
const inertCss = (css: string): string => css.replace(/<\/(style)/gi, '<\\/$1')

/** Where the page loads React from: the platform's own copy, or COMPONENT_UI_CDN. */
export function libraryUrls(config: Config): { react: string; reactDom: string; runtime: string } {
  const cdn = config.COMPONENT_UI_CDN.replace(/\/+$/, '')
  const npm = (path: string) => (cdn === '' ? `${COMPONENT_ASSET_PREFIX}${path}` : `${cdn}/${path}`)
  return {
    react: npm(REACT_ASSET.path),
    reactDom: npm(REACT_DOM_ASSET.path),
    runtime: `${COMPONENT_ASSET_PREFIX}${PLATFORM_UI_ASSET.path}`,
  }
}

/*
 * The page's tail (the bundle, tens of KB, and the closing tags) as UTF-8 bytes, kept per bundle:
 * only the head changes per render (nonce, settings, ticket), so the bundle is not concatenated
 * into a new string and encoded again for every view. Bounded: cleared past 256 bundles.
 */
const tails = new Map<string, Buffer>()
function tailBytes(bundle: string): Buffer {
  let tail = tails.get(bundle)
  if (tail === undefined) {
    if (tails.size >= 256) tails.clear()
    tail = Buffer.from(`${bundle}</script>\n</body>\n</html>`, 'utf8')
    tails.set(bundle, tail)
  }
  return tail
}

/*
 * An embedded page's direct ancestor is another component page, sandboxed: an opaque origin, which
 * no frame-ancestors source matches (Chromium blocks it under `*`, `'self'`, `http:` alike). So an
 * embedded page carries no frame-ancestors: it opens only with the view ticket of an embedding
 * page (a short-lived capability minted for a page that COMPONENT_FRAME_ANCESTORS let be framed),
 * and a site holding such a ticket could render that page's calls anyway.
 */
export function renderPage(config: Config, p: PageInput): { html: Buffer; headers: Record<string, string> } {
  const nonce = pooledRandomBytes(18).toString('base64')
  const urls = libraryUrls(config)
  const settings = {
    version: PLATFORM_UI_VERSION,
    component: p.component,
    input: p.input,
    ticket: p.ticket,
    mode: p.mode,
  }
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(p.title)}</title>
<style nonce="${nonce}">${inertCss(p.css)}</style>
</head>
<body>
<div id="root"></div>
<script type="application/json" id="platform-component">${inertJson(settings)}</script>
<script nonce="${nonce}" src="${escapeHtml(urls.react)}"></script>
<script nonce="${nonce}" src="${escapeHtml(urls.reactDom)}"></script>
<script nonce="${nonce}" src="${escapeHtml(urls.runtime)}"></script>
<script nonce="${nonce}">`
  const csp = [
    // no allow-same-origin, ever: that would hand the bundle this origin's storage back
    'sandbox allow-scripts',
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    // embedded components (enabled_components): the platform's own pages only, each sandboxed by its own CSP
    "frame-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "object-src 'none'",
    ...(p.embedded === true ? [] : [`frame-ancestors ${config.COMPONENT_FRAME_ANCESTORS}`]),
  ].join('; ')
  return {
    html: Buffer.concat([Buffer.from(html, 'utf8'), tailBytes(p.bundle)]),
    headers: {
      'content-security-policy': csp,
      'x-content-type-options': 'nosniff',
      // a share page's URL is its token: never sent on as a Referer
      'referrer-policy': 'no-referrer',
      // the page holds a view ticket
      'cache-control': 'no-store',
    },
  }
}
