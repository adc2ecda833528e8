import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import type { StaticAssets } from '../../gateway/static-assets.ts'
import { COMPONENT_ASSET_PREFIX, PLATFORM_UI_ASSET, PLATFORM_UI_FILE, REACT_ASSET, REACT_DOM_ASSET } from './assets.ts'

/*
 * What rendered component pages load (assets.ts names them): React's UMD builds from the installed
 * packages and the platform-ui runtime, read once at start like the docs assets
 * (gateway/docs.ts), so pages work without internet access. The gateway serves them as it is
 * handed them (`GatewayOptions.assets`, passed by the gateway role).
 */
const require = createRequire(import.meta.url)
const JS = 'text/javascript; charset=utf-8'

export function loadComponentAssets(): Map<string, { body: Buffer; type: string }> {
  const assets = new Map<string, { body: Buffer; type: string }>()
  for (const a of [REACT_ASSET, REACT_DOM_ASSET]) {
    if (a.npm === undefined) continue
    const dir = join(require.resolve(`${a.npm.pkg}/package.json`), '..')
    assets.set(a.path, { body: readFileSync(join(dir, a.npm.file)), type: JS })
  }
  assets.set(PLATFORM_UI_ASSET.path, { body: readFileSync(PLATFORM_UI_FILE), type: JS })
  return assets
}

/** The component pages' libraries as the gateway serves them: at versioned paths, so immutable. */
export function componentStaticAssets(): StaticAssets {
  return {
    prefix: COMPONENT_ASSET_PREFIX,
    files: loadComponentAssets(),
    headers: {
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
      'cross-origin-resource-policy': 'cross-origin',
    },
  }
}
