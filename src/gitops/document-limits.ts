import type { Config } from '../kernel/config.ts'

/** What a config or package document may cost to read, checked before and while it is parsed. */
export interface DocumentLimits {
  /** UTF-8 bytes of the text; a larger text is refused before the parser sees it. */
  maxBytes: number
  /** Aliases a document may expand (`*ref`): the billion-laughs bomb is a few lines of aliases of aliases. */
  maxAliasCount: number
  /** Nested collections: converting to JS objects recurses, so the depth is bounded before it. */
  maxDepth: number
}

// A real config nests resources a dozen levels at most (JSON Schemas inside agents included).
const MAX_DEPTH = 100
// yaml's own default: enough for the anchors a person writes, far from an expansion bomb.
const MAX_ALIAS_COUNT = 100

export function documentLimits(config: Pick<Config, 'CONFIG_MAX_BYTES'>): DocumentLimits {
  return { maxBytes: config.CONFIG_MAX_BYTES, maxAliasCount: MAX_ALIAS_COUNT, maxDepth: MAX_DEPTH }
}
