import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { TObject, TSchema } from '@sinclair/typebox'
import { rpcSubject, type RouteDef } from '../src/api/route.ts'
import type { NatsNames } from '../src/platform/nats-names.ts'

/*
 * A route as the gateway serves it: its schemas compiled once at start, its NATS subject, the
 * uWS path and a pattern for telling 404 from 405.
 */
export interface CompiledRoute {
  def: RouteDef
  paramNames: string[]
  params: TypeCheck<TObject> | undefined
  query: { schema: TObject; check: TypeCheck<TObject>; keys: string[] } | undefined
  body: TypeCheck<TSchema> | undefined
  subject: string
  pattern: RegExp
  /** `/a/:b`; a greedy last parameter becomes `<prefix>*` and is read from the URL. */
  uwsPath: string
  /** The URL prefix before a greedy last parameter ('' otherwise). */
  greedyPrefix: string
  /** The largest JSON body accepted (HTTP_MAX_BODY_BYTES, or the document limit: `RouteDef.bodyLimit`). */
  maxBodyBytes: number
}

/** The body limits a gateway serves: every route's, and those of routes carrying a document. */
export interface BodyLimits {
  maxBodyBytes: number
  documentBodyBytes?: number
}

export function compileRoute(def: RouteDef, names: NatsNames, limits: BodyLimits): CompiledRoute {
  const greedy = def.greedyParam === true
  return {
    def,
    maxBodyBytes:
      def.bodyLimit === 'document' ? Math.max(limits.maxBodyBytes, limits.documentBodyBytes ?? 0) : limits.maxBodyBytes,
    paramNames: [...def.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string),
    params: def.params === undefined ? undefined : TypeCompiler.Compile(def.params),
    query:
      def.query === undefined
        ? undefined
        : { schema: def.query, check: TypeCompiler.Compile(def.query), keys: Object.keys(def.query.properties) },
    body: def.body === undefined ? undefined : TypeCompiler.Compile(def.body),
    subject: rpcSubject(names, def.id),
    pattern: new RegExp(
      `^${greedy ? def.path.replace(/\{[^}]+\}$/, '.+').replace(/\{[^}]+\}/g, '[^/]+') : def.path.replace(/\{[^}]+\}/g, '[^/]+')}$`,
    ),
    uwsPath: greedy
      ? def.path.replace(/\{[^}]+\}$/, '*').replace(/\{([^}]+)\}/g, ':$1')
      : def.path.replace(/\{([^}]+)\}/g, ':$1'),
    greedyPrefix: greedy ? def.path.slice(0, def.path.lastIndexOf('{')) : '',
  }
}

/** A malformed escape keeps the raw text; the params schema then rejects it with a clear 422. */
export function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** The named cookies of a Cookie header (first occurrence wins; values at most 4 KiB, as browsers keep them). */
export function pickCookies(header: string, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    const name = part.slice(0, eq).trim()
    const value = part.slice(eq + 1).trim()
    if (names.includes(name) && !(name in out) && value.length <= 4096) out[name] = safeDecode(value)
  }
  return out
}
