import type { ComponentType } from 'react'

/*
 * The page registry: every area registers its pages (console/src/pages/<area>/register.ts) and
 * the shell builds the router and the navigation from it. A page's code is loaded on first visit
 * (`load`, a dynamic import: its own chunk), so the initial bundle stays small.
 */
export interface PageProps {
  /** The `:name` segments of the page's path, decoded. */
  params: Record<string, string>
}

export interface PageDef {
  /** The URL pattern, e.g. `/agents` or `/agents/:namespace/:name` (`:x` matches one segment). */
  path: string
  title: string
  /** The navigation group (e.g. `Build`, `Data`, `Admin`, `System`). */
  area: string
  /** Only admins see it in the navigation and may open it. */
  admin?: boolean
  /** Left out of the navigation (detail pages reached by a link). */
  hidden?: boolean
  /** Left out of the navigation when a page with this path is registered (a specialised page of the same thing). */
  supersededBy?: string
  load: () => Promise<{ default: ComponentType<PageProps> }>
}

const pages: PageDef[] = []

export function registerPage(page: PageDef): void {
  if (pages.some((p) => p.path === page.path)) throw new Error(`page ${page.path} registered twice`)
  pages.push(page)
}

export function registeredPages(): readonly PageDef[] {
  return pages
}

/** The pages the navigation lists: not hidden, not superseded by a registered page. */
export function navigablePages(): PageDef[] {
  const paths = new Set(pages.map((p) => p.path))
  return pages.filter((p) => p.hidden !== true && (p.supersededBy === undefined || !paths.has(p.supersededBy)))
}

/** The page whose pattern matches the path, with its params; the most specific (fewest `:`) first. */
export function matchPage(pathname: string): { page: PageDef; params: Record<string, string> } | undefined {
  const segments = pathname.split('/').filter((s) => s !== '')
  const candidates = [...pages].sort((a, b) => paramCount(a.path) - paramCount(b.path))
  for (const page of candidates) {
    const pattern = page.path.split('/').filter((s) => s !== '')
    if (pattern.length !== segments.length) continue
    const params: Record<string, string> = {}
    let ok = true
    for (let i = 0; i < pattern.length; i++) {
      const p = pattern[i] as string
      const s = segments[i] as string
      if (p.startsWith(':')) params[p.slice(1)] = safeDecode(s)
      else if (p !== s) {
        ok = false
        break
      }
    }
    if (ok) return { page, params }
  }
  return undefined
}

const paramCount = (path: string): number => path.split('/').filter((s) => s.startsWith(':')).length

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** A path from a pattern and values: `pathOf('/agents/:namespace/:name', {namespace, name})`. */
export function pathOf(pattern: string, params: Record<string, string>): string {
  return pattern.replace(/:([A-Za-z_]+)/g, (_m, k: string) => encodeURIComponent(params[k] ?? ''))
}
