/*
 * The files a rendered component page loads besides itself, served by the gateway under
 * COMPONENT_ASSET_PREFIX (gateway/component-assets.ts) at versioned paths: React's UMD builds from
 * node_modules and the platform-ui runtime (platform-ui.js). No I/O here: the gateway and the page
 * builder (page.ts) both read these names. REACT_VERSION must be the installed react/react-dom
 * (tests/components/assets.test.ts checks it).
 */
export const COMPONENT_ASSET_PREFIX = '/components/assets/'
export const REACT_VERSION = '18.3.1'
export const PLATFORM_UI_VERSION = '1.1.0'

export interface ComponentAsset {
  /** Path below COMPONENT_ASSET_PREFIX (and below a CDN base for the npm ones). */
  path: string
  /** npm package and file inside it, for the ones read from node_modules. */
  npm?: { pkg: string; file: string }
}

export const REACT_ASSET: ComponentAsset = {
  path: `react@${REACT_VERSION}/umd/react.production.min.js`,
  npm: { pkg: 'react', file: 'umd/react.production.min.js' },
}
export const REACT_DOM_ASSET: ComponentAsset = {
  path: `react-dom@${REACT_VERSION}/umd/react-dom.production.min.js`,
  npm: { pkg: 'react-dom', file: 'umd/react-dom.production.min.js' },
}
export const PLATFORM_UI_ASSET: ComponentAsset = { path: `platform-ui@${PLATFORM_UI_VERSION}/platform-ui.js` }

/** The platform-ui runtime's source file (read by the gateway at start). */
export const PLATFORM_UI_FILE = new URL('./platform-ui.js', import.meta.url)
