/*
 * Files the gateway serves itself from memory under a path prefix, read once at start: the docs
 * pages' assets (docs.ts) and whatever the composition hands in (`GatewayOptions.assets`: the
 * component pages' libraries). The gateway knows no feature: a feature's files come in as data.
 */
export interface Asset {
  body: Buffer
  type: string
}

export interface StaticAssets {
  /** The URL prefix, e.g. `/components/assets/`; `<prefix><path>` answers `files.get(path)`. */
  prefix: string
  files: ReadonlyMap<string, Asset>
  /** Headers sent with every file (cache-control and the like). */
  headers: Record<string, string>
}
