import type { ResourceInfo } from './kinds.ts'

/* The kind's own actions on its view page (run a query, test a connection, …): none yet. */
export function KindActions(_props: { r: ResourceInfo; row: Record<string, unknown> }) {
  return null
}
