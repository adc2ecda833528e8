import type { Static } from '@sinclair/typebox'
import { ConnectorSpec } from '../../../schemas/connector.ts'
import type { FieldIssue } from '../../kernel/errors.ts'
import { defineKind } from '../../resources/kind.ts'

/*
 * Connectors (`/api/v1/connectors/{namespace}/{name}`): an HTTP API and its typed operations.
 * Calls go through the guarded outbound client (src/connectors/execute.ts); credentials are
 * references to secrets (`auth.secret`), never stored here. Creating one from an OpenAPI document:
 * POST /api/v1/connectors/import (src/connectors/).
 *
 * The operation cap is a setting (CONNECTOR_MAX_OPERATIONS); a kind description holds no config,
 * so the connectors feature checks it (`specChecks`, src/connectors/operation-cap.ts) and the
 * schema's maxItems is the hard ceiling.
 */

const PATH_PARAM = /\{([^{}/]+)\}/g

function urlIssue(path: string, raw: string, httpsOnly: boolean): FieldIssue[] {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return [{ path, message: 'not a valid URL' }]
  }
  if (url.protocol !== 'https:' && (httpsOnly || url.protocol !== 'http:'))
    return [{ path, message: httpsOnly ? 'must be an https URL' : 'must be an http(s) URL' }]
  if (url.username !== '' || url.password !== '')
    return [{ path, message: 'credentials do not belong in the URL: use auth and a secret' }]
  if (url.hash !== '') return [{ path, message: 'a fragment is not allowed' }]
  return []
}

export function connectorIssues(s: Static<typeof ConnectorSpec>): FieldIssue[] {
  const issues: FieldIssue[] = [...urlIssue('base_url', s.base_url, false)]
  const a = s.auth
  const type = a.type ?? 'none'
  if (['bearer', 'basic', 'api_key'].includes(type) && a.secret === undefined)
    issues.push({ path: 'auth.secret', message: `required for auth type ${type}` })
  if (type === 'oauth2') {
    if (a.oauth2 === undefined)
      issues.push({
        path: 'auth.oauth2',
        message: 'required for auth type oauth2 (authorization_url, token_url, client_id)',
      })
    else {
      issues.push(
        ...urlIssue('auth.oauth2.authorization_url', a.oauth2.authorization_url, false),
        ...urlIssue('auth.oauth2.token_url', a.oauth2.token_url, false),
      )
      if (a.oauth2.revocation_url !== undefined)
        issues.push(...urlIssue('auth.oauth2.revocation_url', a.oauth2.revocation_url, false))
      if (a.oauth2.redirect_uri !== undefined)
        issues.push(...urlIssue('auth.oauth2.redirect_uri', a.oauth2.redirect_uri, false))
    }
  }
  const seen = new Set<string>()
  s.operations.forEach((op, i) => {
    const at = `operations.${String(i)}`
    if (seen.has(op.name)) issues.push({ path: `${at}.name`, message: `duplicate operation name ${op.name}` })
    seen.add(op.name)
    const params = op.parameters ?? {}
    const locations = op.locations ?? {}
    if (params['type'] !== undefined && params['type'] !== 'object')
      issues.push({ path: `${at}.parameters`, message: 'must be a JSON Schema of type object' })
    const props = (params['properties'] ?? {}) as Record<string, unknown>
    for (const m of op.path.matchAll(PATH_PARAM)) {
      const name = m[1] as string
      if (!(name in props))
        issues.push({ path: `${at}.path`, message: `path parameter {${name}} is not in parameters.properties` })
      else if (locations[name] !== 'path')
        issues.push({ path: `${at}.locations.${name}`, message: `{${name}} is in the path: its location must be path` })
    }
    for (const [name, where] of Object.entries(locations)) {
      if (where === 'path' && !op.path.includes(`{${name}}`))
        issues.push({ path: `${at}.locations.${name}`, message: `the path has no {${name}} segment` })
    }
    for (const [field, param] of Object.entries(op.body_mapping ?? {})) {
      if (!(param in props))
        issues.push({ path: `${at}.body_mapping.${field}`, message: `${param} is not in parameters.properties` })
    }
  })
  return issues
}

export const connectorKind = defineKind({
  kind: 'connector',
  plural: 'connectors',
  title: 'Connector',
  description: 'HTTP APIs with typed operations, callable by the API and as agent tools.',
  spec: ConnectorSpec,
  refs: (s) => (s.auth.secret === undefined ? [] : [{ kind: 'secret', ref: s.auth.secret }]),
  validate: connectorIssues,
})
