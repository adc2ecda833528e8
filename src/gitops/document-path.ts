/*
 * Paths into a document, as people read them in error messages: `spec.agents[2].model`. The JSON
 * Pointer form the schema checks answer (`/spec/agents/2/model`) is accepted too, so any issue
 * can be mapped back to a line and column.
 */
export type PathSegment = string | number

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/

export function formatPath(segments: readonly PathSegment[]): string {
  let out = ''
  for (const s of segments) {
    if (typeof s === 'number') out += `[${String(s)}]`
    else if (PLAIN_KEY.test(s)) out += out === '' ? s : `.${s}`
    else out += `[${JSON.stringify(s)}]`
  }
  return out
}

export function parsePath(path: string): PathSegment[] {
  if (path === '' || path === '/') return []
  if (path.startsWith('/'))
    return path
      .slice(1)
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((p) => (/^(0|[1-9][0-9]*)$/.test(p) ? Number(p) : p))
  const out: PathSegment[] = []
  const re = /([^.[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g
  for (const m of path.matchAll(re)) {
    if (m[1] !== undefined) out.push(m[1])
    else if (m[2] !== undefined) out.push(Number(m[2]))
    else if (m[3] !== undefined) out.push(JSON.parse(m[3]) as string)
  }
  return out
}
